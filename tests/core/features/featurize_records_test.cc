#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/features/featurize_records.h"
#include "core/features/murmur3.h"
#include "core/features/text_features.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;
using Ids = std::vector<std::uint32_t>;
using Floats = std::vector<float>;

namespace {

std::string plan_with_inputs(const std::string& inputs) {
  return R"({"model": {"inputs": {)" + inputs + "}}}";
}

const std::string kColumn =
    R"("sender": {"type": "sparse_ids", "features": {"column": "domain", "hash_buckets": 1000}})";
const std::string kCross =
    R"("cross": {"type": "sparse_ids", "features": {"cross": ["domain", "words"], "hash_buckets": 5000, "seed": 9}})";
const std::string kNumeric =
    R"("num": {"type": "dense", "dim": 1, "features": {"numeric": [{"field": "n"}]}})";

std::uint32_t bucket(const std::string& text, std::uint32_t seed, std::uint32_t buckets) {
  return murmur3_32(text, seed) % buckets;
}

// The sorted distinct ids of `texts` with their counts.
void expect_counted(const InputColumns& col, std::size_t example, std::vector<std::uint32_t> ids) {
  std::sort(ids.begin(), ids.end());
  Ids distinct;
  Floats counts;
  for (const std::uint32_t id : ids) {
    if (!distinct.empty() && distinct.back() == id) {
      counts.back() += 1.0f;
    } else {
      distinct.push_back(id);
      counts.push_back(1.0f);
    }
  }
  const auto begin = col.offsets.at(example);
  const auto end = col.offsets.at(example + 1);
  CHECK(Ids(col.ids.begin() + begin, col.ids.begin() + end) == distinct);
  CHECK(Floats(col.weights.begin() + begin, col.weights.begin() + end) == counts);
}

void check_refused(const std::string& inputs, const std::string& records,
                   const std::string& message) {
  INFO(records.substr(0, 200));
  CHECK_THROWS_MATCHES(featurize_records(plan_with_inputs(inputs), records), fedleaf::InvalidInput,
                       MessageContains(message));
}

}  // namespace

TEST_CASE("featurize_records_text_is_the_text_featurizer_per_record", "[features]") {
  const auto cols = featurize_records(
      plan_with_inputs(
          R"("body": {"type": "sparse_ids", "features": {"text": "body", "num_buckets": 997, "ngrams": 2}})"),
      R"([{"body": "Buy NOW, buy now"}, {"other": 1}, {"body": null}, {"body": "hello"}])");
  REQUIRE(cols.size() == 1);
  const InputColumns& c = cols[0];
  CHECK(c.name == "body");
  CHECK(c.kind == InputKind::kSparseIds);
  CHECK(c.num_features == 997);
  TextFeatureOptions o;
  o.num_buckets = 997;
  o.ngrams = 2;
  Ids ids0, ids3;
  Floats w0, w3;
  hash_text_features("Buy NOW, buy now", o, ids0, w0);
  hash_text_features("hello", o, ids3, w3);
  CHECK(c.offsets == Ids{0, static_cast<std::uint32_t>(ids0.size()),
                         static_cast<std::uint32_t>(ids0.size()),
                         static_cast<std::uint32_t>(ids0.size()),
                         static_cast<std::uint32_t>(ids0.size() + ids3.size())});
  // The exact ids: "buy" and "now" twice, "buy now" twice, "now buy" once; "hello" once.
  expect_counted(
      c, 0,
      {bucket("buy", 0, 997), bucket("buy", 0, 997), bucket("now", 0, 997), bucket("now", 0, 997),
       bucket("buy now", 0, 997), bucket("buy now", 0, 997), bucket("now buy", 0, 997)});
  expect_counted(c, 3, {bucket("hello", 0, 997)});
}

TEST_CASE("featurize_records_column_values_hash_to_murmur3_buckets", "[features]") {
  const auto cols = featurize_records(plan_with_inputs(kColumn), R"([
    {"domain": "example.com"}, {"domain": 42}, {"domain": true}, {"domain": ["a", "b", "a", 7]},
    {}, {"domain": null}, {"domain": []}, {"domain": ""}, {"domain": -3.0}])");
  REQUIRE(cols.size() == 1);
  const InputColumns& c = cols[0];
  CHECK(c.name == "sender");
  CHECK(c.num_features == 1000);
  REQUIRE(c.offsets.size() == 10);
  expect_counted(c, 0, {bucket("example.com", 0, 1000)});
  expect_counted(c, 1, {bucket("42", 0, 1000)});
  expect_counted(c, 2, {bucket("true", 0, 1000)});
  expect_counted(
      c, 3,
      {bucket("a", 0, 1000), bucket("b", 0, 1000), bucket("a", 0, 1000), bucket("7", 0, 1000)});
  expect_counted(c, 4, {});
  expect_counted(c, 5, {});
  expect_counted(c, 6, {});
  expect_counted(c, 7, {bucket("", 0, 1000)});
  expect_counted(c, 8, {bucket("-3", 0, 1000)});
}

TEST_CASE("featurize_records_column_seed_changes_the_hash", "[features]") {
  const auto cols = featurize_records(
      plan_with_inputs(
          R"("s": {"type": "sparse_ids", "features": {"column": "d", "hash_buckets": 65536, "seed": 77}})"),
      R"([{"d": "x.org"}])");
  CHECK(cols[0].ids == Ids{bucket("x.org", 77, 65536)});
}

TEST_CASE("featurize_records_cross_is_every_combination_joined_by_the_unit_separator",
          "[features]") {
  const auto cols = featurize_records(plan_with_inputs(kCross), R"([
    {"domain": "a.com", "words": ["win", "cash"]},
    {"domain": ["a.com", "b.org"], "words": ["win", 3, true]},
    {"domain": "a.com"}, {"domain": "a.com", "words": []}, {"domain": null, "words": ["x"]}])");
  const InputColumns& c = cols[0];
  CHECK(c.num_features == 5000);
  const auto h = [](const std::string& s) { return bucket(s, 9, 5000); };
  expect_counted(c, 0,
                 {h("a.com\x1fwin"), h("a.com\x1f"
                                       "cash")});
  expect_counted(c, 1,
                 {h("a.com\x1fwin"),
                  h("a.com\x1f"
                    "3"),
                  h("a.com\x1ftrue"), h("b.org\x1fwin"),
                  h("b.org\x1f"
                    "3"),
                  h("b.org\x1ftrue")});
  expect_counted(c, 2, {});
  expect_counted(c, 3, {});
  expect_counted(c, 4, {});
}

TEST_CASE("featurize_records_cross_of_three_fields_in_listed_order", "[features]") {
  const auto cols = featurize_records(
      plan_with_inputs(
          R"("c": {"type": "sparse_ids", "features": {"cross": ["z", "a", "m"], "hash_buckets": 100000}})"),
      R"([{"a": "1", "m": ["p", "q"], "z": "last"}])");
  const auto h = [](const std::string& s) { return bucket(s, 0, 100000); };
  expect_counted(cols[0], 0,
                 {h("last\x1f"
                    "1\x1fp"),
                  h("last\x1f"
                    "1\x1fq")});
}

TEST_CASE("featurize_records_cross_bounds_combinations_and_bytes", "[features]") {
  std::string words = "[";
  for (int i = 0; i < 2049; ++i) words += (i ? ",\"w" : "\"w") + std::to_string(i) + "\"";
  words += "]";
  check_refused(kCross, R"([{"domain": ["a", "b"], "words": )" + words + "}]",
                "records[0].words: the cross 'domain' x 'words' makes more than 4096 combinations");
  // Exactly 4096 is fine.
  std::string fit = "[";
  for (int i = 0; i < 2048; ++i) fit += (i ? ",\"w" : "\"w") + std::to_string(i) + "\"";
  fit += "]";
  const auto cols = featurize_records(plan_with_inputs(kCross),
                                      R"([{"domain": ["a", "b"], "words": )" + fit + "}]");
  CHECK(cols[0].offsets.back() > 0);
  CHECK(cols[0].offsets.back() <= 4096);
  // A long value crossed with many others would hash gigabytes.
  const std::string long_value(1u << 20, 'd');
  check_refused(kCross, R"([{"domain": ")" + long_value + R"(", "words": )" + fit + "}]",
                "records[0].domain: the cross 'domain' x 'words' would hash more than");
}

TEST_CASE("featurize_records_numeric_transforms_defaults_and_clips", "[features]") {
  const auto cols = featurize_records(
      plan_with_inputs(R"("num": {"type": "dense", "dim": 4, "features": {"numeric": [
      {"field": "length", "transform": "log1p"},
      {"field": "links", "transform": "log1p", "clip": [0, 1]},
      {"field": "caps", "transform": {"standardize": {"mean": 0.1, "std": 0.05}}, "default": 0.2},
      {"field": "raw", "clip": [-1, 1]}]}})"),
      R"([{"length": 100, "links": 30, "caps": 0.3, "raw": 0.5},
                                          {"length": -5, "links": null, "raw": -7}])");
  REQUIRE(cols.size() == 1);
  const InputColumns& c = cols[0];
  CHECK(c.kind == InputKind::kDense);
  CHECK(c.width == 4);
  CHECK(c.dense == Floats{static_cast<float>(std::log1p(100.0)), 1.0f,
                          static_cast<float>((0.3 - 0.1) / 0.05), 0.5f,
                          0.0f,  // log1p(max(-5, 0))
                          0.0f,  // null → default 0 → log1p(0)
                          static_cast<float>((0.2 - 0.1) / 0.05), -1.0f});
}

TEST_CASE("featurize_records_several_inputs_in_name_order", "[features]") {
  const auto cols = featurize_records(plan_with_inputs(kNumeric + "," + kColumn + "," + kCross),
                                      R"([{"domain": "a", "words": ["x"], "n": 2}])");
  REQUIRE(cols.size() == 3);
  CHECK(cols[0].name == "cross");
  CHECK(cols[1].name == "num");
  CHECK(cols[1].dense == Floats{2.0f});
  CHECK(cols[2].name == "sender");
  CHECK(cols[2].ids == Ids{bucket("a", 0, 1000)});
}

TEST_CASE("featurize_records_no_records_make_empty_columns", "[features]") {
  const auto cols = featurize_records(plan_with_inputs(kNumeric + "," + kColumn), "[]");
  REQUIRE(cols.size() == 2);
  CHECK(cols[0].dense.empty());
  CHECK(cols[0].width == 1);
  CHECK(cols[1].offsets == Ids{0});
  CHECK(featurize_records(std::string(R"({"model": {}})"), "[{}]").empty());
}

TEST_CASE("featurize_records_refuse_wrong_types_naming_record_and_field", "[features]") {
  const std::string text = R"("b": {"type": "sparse_ids", "features": {"text": "body"}})";
  check_refused(text, R"([{"body": "ok"}, {"body": 3}])",
                "records[1].body: expected a string (or null), got a number");
  check_refused(text, R"([{"body": ["a"]}])",
                "records[0].body: expected a string (or null), got an array");
  check_refused(kColumn, R"([{"domain": 1.5}])",
                "records[0].domain: a categorical number must be an integer");
  check_refused(
      kColumn, R"([{}, {"domain": {"a": 1}}])",
      "records[1].domain: expected a string, number, boolean or array of them, got an object");
  check_refused(kCross, R"([{"domain": "a", "words": [1.25]}])",
                "records[0].words[0]: a categorical number");
  check_refused(kNumeric, R"([{"n": "12"}])",
                "records[0].n: expected a number (or null), got a string");
  check_refused(kNumeric, R"([{"n": true}])",
                "records[0].n: expected a number (or null), got a boolean");
  check_refused(kNumeric, R"([{"n": [1]}])",
                "records[0].n: expected a number (or null), got an array");
  check_refused(kNumeric, R"([{"n": 1e300}])", "records[0].n: 1e+300 is beyond a 32-bit float");
  check_refused(kNumeric, R"([{"n": 1e999}])", "records[0].n: not a finite number");
  check_refused(kNumeric, R"([{"n": 1}, {"x": {"deep": 1}}])",
                "records[1].x: expected a string, number");
  check_refused(kNumeric, R"({"n": 1})", "records: expected a JSON array");
}

TEST_CASE("featurize_records_hostile_records_work_or_fail_cleanly", "[features]") {
  const std::string text =
      R"("b": {"type": "sparse_ids", "features": {"text": "body", "num_buckets": 1024}})";
  SECTION("a 10 MB string is featurized") {
    std::string body;
    body.reserve(10u << 20);
    while (body.size() < (10u << 20)) body += "lorem ipsum dolor ";
    const auto cols = featurize_records(plan_with_inputs(text), R"([{"body": ")" + body + "\"}]");
    CHECK(cols[0].offsets.size() == 2);
    CHECK(cols[0].ids.size() == 3);
  }
  SECTION("100,000 fields in one record") {
    std::string record = "[{";
    for (int i = 0; i < 100000; ++i)
      record += "\"f" + std::to_string(i) + "\": " + std::to_string(i) + ",";
    record += "\"domain\": \"last\"}]";
    const auto cols = featurize_records(plan_with_inputs(kColumn), record);
    CHECK(cols[0].ids == Ids{bucket("last", 0, 1000)});
  }
  SECTION("a 100,000-valued column") {
    std::string values = "[";
    for (int i = 0; i < 100000; ++i) values += (i ? "," : "") + std::to_string(i);
    const auto cols =
        featurize_records(plan_with_inputs(kColumn), R"([{"domain": )" + values + "]}]");
    CHECK(cols[0].ids.size() <= 1000);
    float total = 0.0f;
    for (const float w : cols[0].weights) total += w;
    CHECK(total == 100000.0f);
  }
}

TEST_CASE("featurize_records_prototype_field_names_are_plain", "[features]") {
  const std::string spec =
      R"("s": {"type": "sparse_ids", "features": {"column": "__proto__", "hash_buckets": 50}})";
  const auto cols =
      featurize_records(plan_with_inputs(spec), R"([{"__proto__": "x"}, {"constructor": "y"}])");
  CHECK(cols[0].offsets == Ids{0, 1, 1});
  CHECK(cols[0].ids == Ids{bucket("x", 0, 50)});
  check_refused(
      spec, R"([{"__proto__": {"polluted": true}}])",
      "records[0].__proto__: expected a string, number, boolean or array of them, got an object");
}

TEST_CASE("featurize_records_takes_parsed_specs", "[features]") {
  InputFeatures f;
  f.input = "s";
  f.path = "s";
  f.kind = FeatureKind::kColumn;
  f.fields = {"d"};
  f.hash_buckets = 0;
  CHECK_THROWS_MATCHES(featurize_records(std::vector<InputFeatures>{f}, "[]"),
                       fedleaf::InvalidInput, MessageContains("s.hash_buckets: must be >= 1"));
  f.hash_buckets = 8;
  const auto cols = featurize_records(std::vector<InputFeatures>{f}, R"([{"d": "q"}])");
  CHECK(cols[0].ids == Ids{bucket("q", 0, 8)});
}
