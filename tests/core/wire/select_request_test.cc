// Every rule of the model:select body parser, in both forms: the error is InvalidInput naming the
// tensor (where there is one) and the rule.
#include <catch2/catch.hpp>

#include "core/wire/select_request.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

std::string u16(std::uint16_t v) {
  return {static_cast<char>(v & 0xff), static_cast<char>(v >> 8)};
}
std::string u32(std::uint32_t v) {
  std::string out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}
std::string record(const std::string& name, std::initializer_list<std::uint32_t> ids) {
  std::string out = u16(static_cast<std::uint16_t>(name.size())) + name +
                    u32(static_cast<std::uint32_t>(ids.size()));
  for (const std::uint32_t id : ids) out += u32(id);
  return out;
}

void require_json_rejected(const std::string& body, const std::string& fragment) {
  CHECK_THROWS_MATCHES(parse_select_request(body, SelectBodyFormat::kJson), fedleaf::InvalidInput,
                       MessageContains(fragment));
}
void require_binary_rejected(const std::string& body, const std::string& fragment) {
  CHECK_THROWS_MATCHES(parse_select_request(body, SelectBodyFormat::kBinary), fedleaf::InvalidInput,
                       MessageContains(fragment));
}

}  // namespace

TEST_CASE("json_and_binary_bodies_parse_to_the_same_request", "[select_request]") {
  const std::string json = R"({"tensors": {"emb/weight": [3, 17, 9000], "b": [], "c": [0]}})";
  const std::string binary =
      record("emb/weight", {3, 17, 9000}) + record("b", {}) + record("c", {0});

  const SelectRequest a = parse_select_request(json, SelectBodyFormat::kJson);
  const SelectRequest b = parse_select_request(binary, SelectBodyFormat::kBinary);

  CHECK(a.rows == b.rows);
  CHECK(a.rows.at("emb/weight") == std::vector<std::uint32_t>{3, 17, 9000});
  CHECK(a.rows.at("b").empty());
}

TEST_CASE("encode_select_request_gives_the_binary_form", "[select_request]") {
  SelectRequest r;
  r.rows["x"] = {1, 4294967295u};
  r.rows["emb/weight"] = {};
  const std::string bytes = encode_select_request(r);
  CHECK(bytes == record("emb/weight", {}) + record("x", {1, 4294967295u}));
  CHECK(parse_select_request(bytes, SelectBodyFormat::kBinary).rows == r.rows);
}

TEST_CASE("encode_select_request_rejects_names_longer_than_u16", "[select_request]") {
  SelectRequest r;
  r.rows[std::string(65536, 'a')] = {};
  CHECK_THROWS_MATCHES(encode_select_request(r), fedleaf::InvalidInput,
                       MessageContains("does not fit the u16 name length"));
}

TEST_CASE("empty_selections_parse_in_both_forms", "[select_request]") {
  CHECK(parse_select_request("", SelectBodyFormat::kBinary).rows.empty());
  CHECK(parse_select_request(R"({"tensors": {}})", SelectBodyFormat::kJson).rows.empty());
}

TEST_CASE("select_body_format_reads_the_content_type", "[select_request]") {
  CHECK(select_body_format("application/json") == SelectBodyFormat::kJson);
  CHECK(select_body_format("Application/JSON; charset=utf-8") == SelectBodyFormat::kJson);
  CHECK(select_body_format("application/vnd.fedleaf.select-ids") == SelectBodyFormat::kBinary);
  CHECK_THROWS_MATCHES(select_body_format("text/plain"), fedleaf::InvalidInput,
                       MessageContains("Content-Type must be application/json or "
                                       "application/vnd.fedleaf.select-ids, got 'text/plain'"));
  CHECK_THROWS_MATCHES(select_body_format(""), fedleaf::InvalidInput,
                       MessageContains("Content-Type must be"));
}

TEST_CASE("select_rejects_unsorted_ids", "[select_request]") {
  require_json_rejected(R"({"tensors": {"e": [5, 3]}})",
                        "tensor 'e': row ids must be sorted strictly ascending (no duplicates): "
                        "3 at position 1 follows 5");
  require_binary_rejected(record("e", {5, 3}), "tensor 'e': row ids must be sorted strictly");
}

TEST_CASE("select_rejects_duplicate_ids", "[select_request]") {
  require_json_rejected(R"({"tensors": {"e": [1, 4, 4]}})",
                        "tensor 'e': row ids must be sorted strictly ascending (no duplicates): "
                        "4 at position 2 follows 4");
  require_binary_rejected(record("e", {7, 7}), "7 at position 1 follows 7");
}

TEST_CASE("select_rejects_a_tensor_listed_twice", "[select_request]") {
  require_json_rejected(R"({"tensors": {"e": [1], "e": [2]}})", "tensor 'e' is listed twice");
  require_binary_rejected(record("e", {1}) + record("e", {2}), "tensor 'e' is listed twice");
}

TEST_CASE("select_rejects_empty_tensor_names", "[select_request]") {
  require_json_rejected(R"({"tensors": {"": [1]}})", "a tensor name is empty");
  require_binary_rejected(record("", {1}), "a tensor name is empty");
}

TEST_CASE("select_rejects_ids_that_are_not_u32_integers", "[select_request]") {
  require_json_rejected(R"({"tensors": {"e": [-1]}})",
                        "tensor 'e': row id -1 is not a row id (integers 0..4294967295)");
  require_json_rejected(R"({"tensors": {"e": [4294967296]}})",
                        "tensor 'e': row id 4294967296 is not a row id");
  require_json_rejected(R"({"tensors": {"e": [1.5]}})", "tensor 'e': row id 1.5 is not a row id");
  require_json_rejected(R"({"tensors": {"e": [1e2]}})", "tensor 'e': row id 1e2 is not a row id");
  require_json_rejected(R"({"tensors": {"e": ["1"]}})",
                        "found a string where tensor 'e' (an array of row ids) belongs");
  require_json_rejected(R"({"tensors": {"e": [[1]]}})", "found an array where tensor 'e'");
}

TEST_CASE("select_rejects_json_of_another_shape", "[select_request]") {
  require_json_rejected("", "not valid JSON");
  require_json_rejected(R"({"tensors": {"e": [1]})", "not valid JSON");
  require_json_rejected(R"({"tensors": {"e": [1]}} x)", "not valid JSON");
  require_json_rejected("[1]", "found an array where the body belongs");
  require_json_rejected("{}", "needs a field 'tensors'");
  require_json_rejected(R"({"tensors": {}, "extra": 1})", "unknown field 'extra'");
  require_json_rejected(R"({"tensors": {}, "tensors": {}})", "field 'tensors' appears twice");
  require_json_rejected(R"({"tensors": [1]})",
                        "found an array where 'tensors' (an object of tensor names) belongs");
  require_json_rejected(R"({"tensors": {"e": {}}})",
                        "found an object where tensor 'e' (an array of row ids) belongs");
  require_json_rejected(R"({"tensors": {"e": null}})", "found null where tensor 'e'");
  require_json_rejected(R"({"tensors": {"e": true}})", "found a boolean where tensor 'e'");
  require_json_rejected("{\"tensors\": {\"\xff\": []}}", "not valid JSON");
}

TEST_CASE("select_rejects_truncated_binary_records", "[select_request]") {
  require_binary_rejected(std::string(1, '\x01'),
                          "record at byte 0: truncated name length (needs 2 bytes)");
  require_binary_rejected(u16(5) + "abc", "record at byte 0: name of 5 bytes runs past the end");
  require_binary_rejected(u16(1) + "e" + "\x01\x00", "tensor 'e': truncated count (needs 4 bytes)");
  require_binary_rejected(u16(1) + "e" + u32(2) + u32(1),
                          "tensor 'e': 2 row ids run past the end of the body");
  require_binary_rejected(record("a", {1}) + u16(1) + "e" + u32(4294967295u),
                          "record at byte 11: tensor 'e': 4294967295 row ids run past the end");
  require_binary_rejected(record("e", {1}) + std::string(1, '\0'),
                          "record at byte 11: truncated name length");
}

TEST_CASE("select_rejects_binary_names_that_are_not_utf8", "[select_request]") {
  require_binary_rejected(record("\xff\xfe", {}), "tensor name is not valid UTF-8");
}
