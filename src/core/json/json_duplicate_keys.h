// DuplicateKeys: the first key given twice in one JSON object, at any depth, found while
// nlohmann::json parses — its parser keeps the last value silently, and "the last one wins" lets
// two readers of one document (a proxy and the server, the server and a third-party leaf) read
// different plans, claims or metadata. Every JSON document fedleaf reads from outside refuses it.
//
//   DuplicateKeys duplicates;
//   const json value = json::parse(text, duplicates.callback(), /*allow_exceptions=*/false);
//   if (duplicates.found()) throw InvalidInput("plan: the key " + duplicates.describe() + " appears
//   twice");
//
// The object must outlive the parse (the callback refers to it).
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fedleaf::core {

class DuplicateKeys {
 public:
  // For json::parse; it never discards a value.
  nlohmann::json::parser_callback_t callback();
  bool found() const { return found_; }
  // The duplicate key quoted, with the key of the object holding it when that object is not the
  // document: "'loss'" or "'dtype' (in 'emb/weight')".
  std::string describe() const;

 private:
  struct OpenObject {
    std::set<std::string> keys;
    std::string last_key;
  };
  std::vector<OpenObject> open_;  // the objects being read, outermost first
  bool found_ = false;
  std::string key_;
  std::string parent_key_;  // "" when the duplicate is at the document's top level
};

}  // namespace fedleaf::core
