#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/features/records_json.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;
using Strings = std::vector<std::string>;

namespace {

void check_refused(const std::string& text, const std::string& message) {
  INFO(text.substr(0, 200));
  CHECK_THROWS_MATCHES(parse_records(text), fedleaf::InvalidInput, MessageContains(message));
}

}  // namespace

TEST_CASE("records_json_reads_flat_records", "[features]") {
  const auto records =
      parse_records(R"([{"a": "x", "n": 1.5, "b": true, "z": null, "list": ["p", 2, false]}, {}])");
  REQUIRE(records.size() == 2);
  CHECK(record_field(records[0], "a")->get<std::string>() == "x");
  CHECK(record_field(records[0], "missing") == nullptr);
  CHECK(record_field(records[0], "z")->is_null());
  CHECK(records[1].empty());
  CHECK(parse_records("[]").empty());
}

TEST_CASE("records_json_refuse_what_is_not_an_array_of_flat_records", "[features]") {
  check_refused("{\"a\": 1}", "records: expected a JSON array of records (objects), got an object");
  check_refused("3", "records: expected a JSON array of records (objects), got a number");
  check_refused("\"x\"", "records: expected a JSON array of records (objects), got a string");
  check_refused("[{}, 2]", "records[1]: expected a record (an object), got a number");
  check_refused("[{}, {}, []]", "records[2]: expected a record (an object), got an array");
  check_refused("[null]", "records[0]: expected a record (an object), got null");
  check_refused(R"([{"a": 1}, {"sender_domain": {"x": 1}}])",
                "records[1].sender_domain: expected a string, number, boolean or array of them, "
                "got an object");
  check_refused(R"([{"a": [1, [2]]}])",
                "records[0].a[1]: expected a string, number or boolean (an array holds no array)");
  check_refused(R"([{"a": ["x", {}]}])",
                "records[0].a[1]: expected a string, number or boolean (an array holds no object)");
  check_refused(R"([{"a": ["x", null]}])",
                "records[0].a[1]: expected a string, number or boolean, got null");
  check_refused(R"([{"a": 1, "a": 2}])", "records[0]: the key 'a' appears twice");
  check_refused(R"([{"a": 1}, {"length": 1e999}])", "records[1].length: not a finite number");
  check_refused(R"([{"length": -1e999}])", "records[0].length: not a finite number");
  check_refused(R"([{"a": 1},)", "records: not valid JSON");
  check_refused(R"([{"a": NaN}])", "records: not valid JSON");
  check_refused("[" + std::string(100, '[') + std::string(100, ']') + "]",
                "records: JSON nested deeper");
}

TEST_CASE("records_json_parser_messages_are_bounded", "[features]") {
  const std::string huge(10u << 20, 'x');
  try {
    parse_records("[{\"a\": \"" + huge);  // an unterminated 10 MB string
    FAIL("no error");
  } catch (const fedleaf::InvalidInput& e) {
    CHECK(std::string(e.what()).find("records: not valid JSON") == 0);
    CHECK(std::string(e.what()).size() < 400);
  }
}

TEST_CASE("records_json_field_paths_quote_names_that_are_not_plain", "[features]") {
  CHECK(record_field_path(3, "length") == "records[3].length");
  CHECK(record_field_path(0, "__proto__") == "records[0].__proto__");
  CHECK(record_field_path(1, "a b") == "records[1]['a b']");
  CHECK(record_field_path(1, "") == "records[1]['']");
  CHECK(record_field_path(1, "9x") == "records[1]['9x']");
  CHECK(record_field_path(2, std::string("a\nb", 3)) == "records[2]['a\\x0ab']");
  CHECK(record_field_path(2, std::string(100, 'k')) ==
        "records[2]['" + std::string(64, 'k') + "'...]");
}

TEST_CASE("records_json_prototype_keys_are_plain_fields", "[features]") {
  const auto records = parse_records(R"([{"__proto__": "x", "constructor": 1, "": 2}])");
  CHECK(record_field(records[0], "__proto__")->get<std::string>() == "x");
  CHECK(record_field(records[0], "constructor")->get<int>() == 1);
  CHECK(record_field(records[0], "")->get<int>() == 2);
}

TEST_CASE("records_json_categorical_texts", "[features]") {
  const auto records = parse_records(
      R"([{"s": "Ab", "t": true, "f": false, "i": -42, "u": 18, "d": 3.0, "z": -0.0, "big": 9007199254740992,
           "list": ["x", 7, true], "empty": [], "null": null,
           "half": 1.5, "huge": 9007199254740993, "hugef": 1e300, "bad": ["x", 2.5]}])");
  const auto& r = records[0];
  Strings out;
  for (const char* field : {"s", "t", "f", "i", "u", "d", "z", "big", "list", "empty", "null"}) {
    categorical_texts(*record_field(r, field), field, out);
  }
  CHECK(out == Strings{"Ab", "true", "false", "-42", "18", "3", "0", "9007199254740992", "x", "7",
                       "true"});
  CHECK_THROWS_MATCHES(
      categorical_texts(*record_field(r, "half"), "records[0].half", out), fedleaf::InvalidInput,
      MessageContains("records[0].half: a categorical number must be an integer in "
                      "[-2^53, 2^53], got 1.5"));
  CHECK_THROWS_MATCHES(categorical_texts(*record_field(r, "huge"), "p", out), fedleaf::InvalidInput,
                       MessageContains("p: a categorical number must be an integer"));
  CHECK_THROWS_MATCHES(categorical_texts(*record_field(r, "hugef"), "p", out),
                       fedleaf::InvalidInput,
                       MessageContains("p: a categorical number must be an integer"));
  CHECK_THROWS_MATCHES(categorical_texts(*record_field(r, "bad"), "p", out), fedleaf::InvalidInput,
                       MessageContains("p[1]: a categorical number must be an integer"));
}

TEST_CASE("records_json_type_names", "[features]") {
  const auto r =
      parse_records(R"([{"o": [1], "s": "x", "b": true, "n": null, "i": 1, "f": 1.5}])")[0];
  CHECK(std::string(json_type_name(*record_field(r, "o"))) == "an array");
  CHECK(std::string(json_type_name(nlohmann::json::object())) == "an object");
  CHECK(std::string(json_type_name(*record_field(r, "s"))) == "a string");
  CHECK(std::string(json_type_name(*record_field(r, "b"))) == "a boolean");
  CHECK(std::string(json_type_name(*record_field(r, "n"))) == "null");
  CHECK(std::string(json_type_name(*record_field(r, "i"))) == "a number");
  CHECK(std::string(json_type_name(*record_field(r, "f"))) == "a number");
}
