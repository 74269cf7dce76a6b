#include "core/json/json_nesting.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "tests/core/error_matchers.h"

namespace fedleaf::core {

using test::MessageContains;

namespace {

std::string nested(std::size_t depth, const std::string& inner = "1") {
  std::string text;
  for (std::size_t i = 0; i < depth; ++i) text += i % 2 ? "{\"k\":" : "[";
  text += inner;
  for (std::size_t i = depth; i-- > 0;) text += i % 2 ? "}" : "]";
  return text;
}

}  // namespace

TEST_CASE("json_nesting_accepts_up_to_the_limit_and_names_the_document_past_it", "[json]") {
  CHECK_NOTHROW(check_json_nesting(nested(3), 3, "plan"));
  CHECK_NOTHROW(check_json_nesting("1", 0, "plan"));
  CHECK_THROWS_MATCHES(check_json_nesting(nested(4), 3, "plan"), InvalidInput,
                       MessageContains("plan: JSON nested deeper than 3 levels"));
  CHECK_THROWS_AS(check_json_nesting(nested(100000), kMaxJsonNesting, "plan"), InvalidInput);
}

TEST_CASE("json_nesting_counts_the_deepest_point_not_the_total", "[json]") {
  // Siblings do not add up: 1000 arrays side by side are depth 2.
  std::string wide = "[";
  for (int i = 0; i < 1000; ++i) wide += (i ? "," : "") + nested(1);
  wide += "]";
  CHECK_NOTHROW(check_json_nesting(wide, 2, "body"));
  CHECK_THROWS_AS(check_json_nesting(wide, 1, "body"), InvalidInput);
}

TEST_CASE("json_nesting_ignores_brackets_in_strings_and_escaped_quotes", "[json]") {
  const std::string text = R"({"a": "[[[{{{", "b\"[[[": ["\\", "\"]]]]"], "c": "\u005b"})";
  REQUIRE(nlohmann::json::parse(text).is_object());
  CHECK_NOTHROW(check_json_nesting(text, 2, "header"));
  CHECK_THROWS_AS(check_json_nesting(text, 1, "header"), InvalidInput);
  // A string that never ends, unbalanced closers, a trailing backslash: no error of its own
  // (the parser reports bad syntax) and no read past the text.
  CHECK_NOTHROW(check_json_nesting(R"(["[[[[)", 1, "x"));
  CHECK_NOTHROW(check_json_nesting("]]]}}[", 1, "x"));
  CHECK_NOTHROW(check_json_nesting("\"\\", 1, "x"));
}

}  // namespace fedleaf::core
