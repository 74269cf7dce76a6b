// Readers of plan JSON fields, shared by the plan's two parsers (train/plan.cc: model, train and
// data; aggregation/update_plan.cc: updates), so both answer a broken field alike:
// InvalidInput "<path>: <rule>", with the path in the plan's own syntax.
//
//   using namespace plan_json;
//   const json* v = find_field(object, "epochs");                    // nullptr when absent
//   std::string loss = get_string(model, "plan.model", "loss");      // "plan.model.loss: missing"
//   std::string hash = get_string(f, path, "hash", "murmur3_32");    // with a default
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json/json_duplicate_keys.h"
#include "core/json/json_nesting.h"

namespace fedleaf::core::plan_json {

using json = nlohmann::json;

[[noreturn]] inline void fail(const std::string& path, const std::string& rule) {
  throw InvalidInput(path + ": " + rule);
}

inline const json* find_field(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// String field `key` of `object` (at `path`); `fallback` when absent, or missing is an error
// when there is none.
inline std::string get_string(const json& object, const std::string& path, const char* key,
                              const char* fallback = nullptr) {
  const json* v = find_field(object, key);
  if (v == nullptr) {
    if (fallback == nullptr) fail(path + "." + key, "missing");
    return fallback;
  }
  if (!v->is_string()) fail(path + "." + key, "expected a string");
  return v->get<std::string>();
}

// The plan's text as JSON; "plan: not valid JSON (...)" when it is not, "plan: JSON nested
// deeper than ..." past kMaxJsonNesting, "plan: the key 'epochs' (in 'train') appears twice".
inline json parse_text(const std::string& text) {
  check_json_nesting(text, kMaxJsonNesting, "plan");
  DuplicateKeys duplicates;
  json plan;
  try {
    plan = json::parse(text, duplicates.callback());
  } catch (const json::exception& e) {
    fail("plan", std::string("not valid JSON (") + e.what() + ")");
  }
  if (duplicates.found()) fail("plan", "the key " + duplicates.describe() + " appears twice");
  return plan;
}

}  // namespace fedleaf::core::plan_json
