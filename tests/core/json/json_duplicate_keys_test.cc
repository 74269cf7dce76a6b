#include "core/json/json_duplicate_keys.h"

#include <catch2/catch.hpp>
#include <string>

namespace fedleaf::core {

namespace {

// What a parse with DuplicateKeys finds: "" for nothing, else describe().
std::string duplicate_in(const std::string& text) {
  DuplicateKeys duplicates;
  const nlohmann::json value = nlohmann::json::parse(text, duplicates.callback(), false);
  REQUIRE_FALSE(value.is_discarded());
  return duplicates.found() ? duplicates.describe() : std::string();
}

}  // namespace

TEST_CASE("json_duplicate_keys_finds_a_key_given_twice_in_one_object_at_any_depth", "[json]") {
  CHECK(duplicate_in(R"({"a": 1, "b": 2})").empty());
  CHECK(duplicate_in(R"({"a": 1, "a": 2})") == "'a'");
  CHECK(duplicate_in(R"({"train": {"epochs": 1, "epochs": 100}})") == "'epochs' (in 'train')");
  CHECK(duplicate_in(R"({"layers": [{"type": "dense"}, {"type": "x", "type": "y"}]})") ==
        "'type' (in 'layers')");
  CHECK(duplicate_in(R"([{"k": 1, "k": 1}])") == "'k'");
  // The same key in sibling or nested objects is not a duplicate.
  CHECK(duplicate_in(R"({"a": {"a": {"a": 1}}, "b": {"a": 2}})").empty());
  CHECK(duplicate_in(R"([{"k": 1}, {"k": 2}])").empty());
  // The first duplicate is the one named.
  CHECK(duplicate_in(R"({"x": {"p": 1, "p": 2}, "y": 1, "y": 2})") == "'p' (in 'x')");
}

TEST_CASE("json_duplicate_keys_keeps_the_parsed_value_whole", "[json]") {
  DuplicateKeys duplicates;
  const auto value =
      nlohmann::json::parse(R"({"a": [1, {"b": 2}], "c": null})", duplicates.callback(), false);
  CHECK_FALSE(duplicates.found());
  CHECK(value == nlohmann::json::parse(R"({"a": [1, {"b": 2}], "c": null})"));
}

}  // namespace fedleaf::core
