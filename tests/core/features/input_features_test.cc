#include <catch2/catch.hpp>

#include <string>

#include "core/features/input_features.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

// A plan whose only input `x` has type/dim `input` and features `features` (JSON fragments).
std::string plan_with(const std::string& input, const std::string& features) {
  return R"({"model": {"inputs": {"x": {)" + input + R"(, "features": )" + features + "}}}}";
}

const std::string kSparse = R"("type": "sparse_ids")";

void check_refused(const std::string& input, const std::string& features,
                   const std::string& message) {
  INFO(features);
  CHECK_THROWS_MATCHES(parse_input_features(plan_with(input, features)), fedleaf::InvalidInput,
                       MessageContains(message));
}

}  // namespace

TEST_CASE("input_features_parse_every_kind_in_the_order_of_input_names", "[features]") {
  const auto inputs = parse_input_features(R"({"model": {"inputs": {
    "tokens": "sparse_ids",
    "num": {"type": "dense", "dim": 3, "features": {"numeric": [
      {"field": "length", "transform": "log1p"},
      {"field": "links", "clip": [0, 10], "default": 1},
      {"field": "caps", "transform": {"standardize": {"mean": 0.1, "std": 0.05}}}]}},
    "body": {"type": "sparse_ids", "features": {"text": "body", "num_buckets": 1000, "ngrams": 2,
                                                 "lowercase": false}},
    "sender": {"type": "sparse_ids", "features": {"column": "domain", "hash_buckets": 64,
                                                   "seed": 3}},
    "cross": {"type": "sparse_ids", "features": {"cross": ["domain", "words"],
                                                  "hash_buckets": 128}},
    "plain": {"type": "sparse_ids"}}}})");
  REQUIRE(inputs.size() == 4);
  CHECK(inputs[0].input == "body");
  CHECK(inputs[0].kind == FeatureKind::kText);
  CHECK(inputs[0].fields == std::vector<std::string>{"body"});
  CHECK(inputs[0].text.num_buckets == 1000);
  CHECK(inputs[0].text.ngrams == 2);
  CHECK_FALSE(inputs[0].text.lowercase);
  CHECK(inputs[0].num_features() == 1000);
  CHECK(inputs[0].input_kind() == InputKind::kSparseIds);
  CHECK(inputs[0].path == "plan.model.inputs.body.features");

  CHECK(inputs[1].input == "cross");
  CHECK(inputs[1].kind == FeatureKind::kCross);
  CHECK(inputs[1].fields == std::vector<std::string>{"domain", "words"});
  CHECK(inputs[1].hash_buckets == 128);
  CHECK(inputs[1].seed == 0);

  CHECK(inputs[2].input == "num");
  CHECK(inputs[2].kind == FeatureKind::kNumeric);
  CHECK(inputs[2].input_kind() == InputKind::kDense);
  CHECK(inputs[2].num_features() == 3);
  REQUIRE(inputs[2].numeric.size() == 3);
  CHECK(inputs[2].numeric[0].transform == NumericTransform::kLog1p);
  CHECK_FALSE(inputs[2].numeric[0].clip);
  CHECK(inputs[2].numeric[1].transform == NumericTransform::kNone);
  CHECK(inputs[2].numeric[1].clip);
  CHECK(inputs[2].numeric[1].lo == 0.0);
  CHECK(inputs[2].numeric[1].hi == 10.0);
  CHECK(inputs[2].numeric[1].fallback == 1.0);
  CHECK(inputs[2].numeric[2].transform == NumericTransform::kStandardize);
  CHECK(inputs[2].numeric[2].mean == 0.1);
  CHECK(inputs[2].numeric[2].std == 0.05);
  CHECK(inputs[2].numeric[2].fallback == 0.0);

  CHECK(inputs[3].input == "sender");
  CHECK(inputs[3].kind == FeatureKind::kColumn);
  CHECK(inputs[3].hash_buckets == 64);
  CHECK(inputs[3].seed == 3);
}

TEST_CASE("input_features_text_defaults_are_the_plan_features_defaults", "[features]") {
  const auto inputs = parse_input_features(plan_with(kSparse, R"({"text": "body"})"));
  REQUIRE(inputs.size() == 1);
  const TextFeatureOptions defaults;
  CHECK(inputs[0].text.num_buckets == defaults.num_buckets);
  CHECK(inputs[0].text.ngrams == defaults.ngrams);
  CHECK(inputs[0].text.lowercase == defaults.lowercase);
  CHECK(inputs[0].text.min_token_length == defaults.min_token_length);
}

TEST_CASE("input_features_none_without_model_inputs", "[features]") {
  CHECK(parse_input_features(R"({})").empty());
  CHECK(parse_input_features(R"({"model": {"layers": []}})").empty());
  CHECK(parse_input_features(R"({"model": {"inputs": {"tokens": "sparse_ids"}}})").empty());
}

TEST_CASE("input_features_refuse_broken_plan_json", "[features]") {
  CHECK_THROWS_MATCHES(parse_input_features(std::string("[1]")), fedleaf::InvalidInput,
                       MessageContains("plan: expected a JSON object"));
  CHECK_THROWS_MATCHES(parse_input_features(std::string("{\"model\": 1}")), fedleaf::InvalidInput,
                       MessageContains("plan.model: expected an object"));
  CHECK_THROWS_MATCHES(parse_input_features(std::string(R"({"model": {"inputs": []}})")),
                       fedleaf::InvalidInput,
                       MessageContains("plan.model.inputs: expected an object"));
  CHECK_THROWS_MATCHES(parse_input_features(std::string(R"({"model": {}, "model": {}})")),
                       fedleaf::InvalidInput, MessageContains("appears twice"));
  CHECK_THROWS_MATCHES(parse_input_features(std::string(100, '[')), fedleaf::InvalidInput,
                       MessageContains("nested deeper"));
}

TEST_CASE("input_features_refuse_each_broken_rule", "[features]") {
  const std::string p = "plan.model.inputs.x.features";
  check_refused(kSparse, "1", p + ": expected an object");
  check_refused(kSparse, "{}", p + ": expected exactly one of");
  check_refused(kSparse, R"({"text": "a", "column": "b", "hash_buckets": 2})",
                p + ": expected exactly one of");
  // Unknown fields, per kind.
  check_refused(kSparse, R"({"text": "a", "hash_buckets": 4})",
                p + ": unknown field 'hash_buckets'");
  check_refused(kSparse, R"({"column": "a", "hash_buckets": 4, "ngrams": 2})",
                p + ": unknown field 'ngrams'");
  check_refused(kSparse, R"({"cross": ["a", "b"], "hash_buckets": 4, "x": 1})",
                p + ": unknown field 'x'");
  check_refused(R"("type": "dense", "dim": 1)", R"({"numeric": [{"field": "a"}], "seed": 1})",
                p + ": unknown field 'seed'");
  // Field names.
  check_refused(kSparse, R"({"text": 3})", p + ".text: expected a field name");
  check_refused(kSparse, R"({"text": ""})", p + ".text: a field name has 1 to 256 bytes");
  check_refused(kSparse, R"({"column": ")" + std::string(257, 'a') + R"(", "hash_buckets": 2})",
                p + ".column: a field name has 1 to 256 bytes");
  // Text options go through the text options parser.
  check_refused(kSparse, R"({"text": "a", "ngrams": 0})",
                p + ".ngrams: expected an integer in [1, 8]");
  check_refused(kSparse, R"({"text": "a", "num_buckets": 0})",
                p + ".num_buckets: expected an integer");
  check_refused(kSparse, R"({"text": "a", "hash": "md5"})", p + ".hash: unknown hash 'md5'");
  check_refused(kSparse, R"({"text": "a", "min_token_length": 5, "max_token_length": 4})",
                p + ".max_token_length: must be >= min_token_length");
  // Hashing.
  check_refused(kSparse, R"({"column": "a"})", p + ".hash_buckets: missing");
  check_refused(kSparse, R"({"column": "a", "hash_buckets": 0})",
                p + ".hash_buckets: expected an integer in [1, 2147483647]");
  check_refused(kSparse, R"({"column": "a", "hash_buckets": 2147483648})",
                p + ".hash_buckets: expected an integer in [1, 2147483647]");
  check_refused(kSparse, R"({"column": "a", "hash_buckets": 2.5})",
                p + ".hash_buckets: expected an integer");
  check_refused(kSparse, R"({"column": "a", "hash_buckets": 2, "seed": -1})",
                p + ".seed: expected an integer");
  // Cross lists.
  check_refused(kSparse, R"({"cross": "a", "hash_buckets": 2})",
                p + ".cross: expected a list of 2 to 8");
  check_refused(kSparse, R"({"cross": ["a"], "hash_buckets": 2})",
                p + ".cross: expected a list of 2 to 8");
  check_refused(kSparse, R"({"cross": ["a","b","c","d","e","f","g","h","i"], "hash_buckets": 2})",
                p + ".cross: expected a list of 2 to 8");
  check_refused(kSparse, R"({"cross": ["a", "a"], "hash_buckets": 2})",
                p + ".cross[1]: 'a' is listed twice");
  check_refused(kSparse, R"({"cross": ["a", 1], "hash_buckets": 2})",
                p + ".cross[1]: expected a field name");
}

TEST_CASE("input_features_refuse_broken_numeric_entries_and_type_mismatches", "[features]") {
  const std::string p = "plan.model.inputs.x.features";
  const std::string dense1 = R"("type": "dense", "dim": 1)";
  check_refused(dense1, R"({"numeric": []})", p + ".numeric: expected a non-empty list");
  check_refused(dense1, R"({"numeric": {"field": "a"}})",
                p + ".numeric: expected a non-empty list");
  check_refused(dense1, R"({"numeric": ["a"]})", p + ".numeric[0]: expected an object");
  check_refused(dense1, R"({"numeric": [{}]})", p + ".numeric[0].field: missing");
  check_refused(dense1, R"({"numeric": [{"field": "a", "scale": 2}]})",
                p + ".numeric[0]: unknown field 'scale'");
  check_refused(dense1, R"({"numeric": [{"field": "a", "transform": "log"}]})",
                p + ".numeric[0].transform: unknown transform 'log' (expected none or log1p)");
  check_refused(dense1, R"({"numeric": [{"field": "a", "transform": 1}]})",
                p + ".numeric[0].transform: expected \"none\", \"log1p\" or");
  check_refused(dense1, R"({"numeric": [{"field": "a", "transform": {"scale": 1}}]})",
                p + ".numeric[0].transform: unknown field 'scale'");
  check_refused(dense1, R"({"numeric": [{"field": "a", "transform": {}}]})",
                p + ".numeric[0].transform.standardize: missing");
  check_refused(dense1, R"({"numeric": [{"field": "a", "transform": {"standardize": 1}}]})",
                p + ".numeric[0].transform.standardize: expected an object");
  check_refused(dense1,
                R"({"numeric": [{"field": "a", "transform": {"standardize": {"std": 1}}}]})",
                p + ".numeric[0].transform.standardize.mean: missing");
  check_refused(dense1,
                R"({"numeric": [{"field": "a", "transform": {"standardize": {"mean": 1}}}]})",
                p + ".numeric[0].transform.standardize.std: missing");
  check_refused(
      dense1,
      R"({"numeric": [{"field": "a", "transform": {"standardize": {"mean": 0, "std": 0}}}]})",
      p + ".numeric[0].transform.standardize.std: must be > 0");
  check_refused(
      dense1,
      R"({"numeric": [{"field": "a", "transform": {"standardize": {"mean": "0", "std": 1}}}]})",
      p + ".numeric[0].transform.standardize.mean: expected a number");
  check_refused(
      dense1,
      R"({"numeric": [{"field": "a", "transform": {"standardize": {"mean": 0, "std": 1, "x": 1}}}]})",
      p + ".numeric[0].transform.standardize: unknown field 'x'");
  check_refused(dense1, R"({"numeric": [{"field": "a", "clip": [1]}]})",
                p + ".numeric[0].clip: expected [lo, hi]");
  check_refused(dense1, R"({"numeric": [{"field": "a", "clip": [2, 1]}]})",
                p + ".numeric[0].clip: lo must be <= hi");
  check_refused(dense1, R"({"numeric": [{"field": "a", "clip": [0, "1"]}]})",
                p + ".numeric[0].clip[1]: expected a number");
  check_refused(dense1, R"({"numeric": [{"field": "a", "default": null}]})",
                p + ".numeric[0].default: expected a number");
  // Entries == dim; the input's type is the kind's.
  check_refused(R"("type": "dense", "dim": 2)", R"({"numeric": [{"field": "a"}]})",
                p + ".numeric: 1 entries for an input of dim 2 (one entry per unit)");
  check_refused(R"("type": "dense")", R"({"numeric": [{"field": "a"}]})",
                "plan.model.inputs.x.dim: missing");
  check_refused(kSparse, R"({"numeric": [{"field": "a"}]})",
                "plan.model.inputs.x.type: numeric features make a dense input");
  check_refused(
      dense1, R"({"column": "a", "hash_buckets": 2})",
      "plan.model.inputs.x.type: text, column and cross features make a sparse_ids input");
  check_refused(R"("dim": 1)", R"({"column": "a", "hash_buckets": 2})",
                "plan.model.inputs.x.type: missing");
}

TEST_CASE("input_features_validate_a_spec_built_by_hand", "[features]") {
  InputFeatures f;
  f.input = "x";
  f.path = "p";
  f.kind = FeatureKind::kColumn;
  f.fields = {"a"};
  f.hash_buckets = 0;
  CHECK_THROWS_MATCHES(validate(f), fedleaf::InvalidInput,
                       MessageContains("p.hash_buckets: must be >= 1"));
  f.hash_buckets = 5;
  CHECK_NOTHROW(validate(f));
  f.fields = {};
  CHECK_THROWS_MATCHES(validate(f), fedleaf::InvalidInput, MessageContains("exactly one field"));
  f.kind = FeatureKind::kCross;
  f.fields = {"a"};
  CHECK_THROWS_MATCHES(validate(f), fedleaf::InvalidInput,
                       MessageContains("p.cross: expected 2 to 8"));
  f.kind = FeatureKind::kText;
  f.fields = {"a"};
  f.text.ngrams = 0;
  CHECK_THROWS_MATCHES(validate(f), fedleaf::InvalidInput, MessageContains("ngrams"));
  f.kind = FeatureKind::kNumeric;
  CHECK_THROWS_MATCHES(validate(f), fedleaf::InvalidInput,
                       MessageContains("p.numeric: expected at least one"));
  f.numeric.push_back(NumericFeature{});
  f.numeric[0].field = "a";
  CHECK_NOTHROW(validate(f));
  f.numeric[0].std = 0.0;
  CHECK_THROWS_MATCHES(validate(f), fedleaf::InvalidInput, MessageContains("std > 0"));
}

TEST_CASE("input_features_buckets_must_fit_the_vocab", "[features]") {
  const auto inputs = parse_input_features(R"({"model": {"inputs": {
    "b": {"type": "sparse_ids", "features": {"text": "body", "num_buckets": 1000}},
    "s": {"type": "sparse_ids", "features": {"column": "d", "hash_buckets": 64}},
    "n": {"type": "dense", "dim": 1, "features": {"numeric": [{"field": "a"}]}}}}})");
  REQUIRE(inputs.size() == 3);
  CHECK_NOTHROW(check_buckets_fit_vocab(inputs[0], 1000, "emb/weight"));
  CHECK_THROWS_MATCHES(
      check_buckets_fit_vocab(inputs[0], 999, "emb/weight"), fedleaf::InvalidInput,
      MessageContains("plan.model.inputs.b.features.num_buckets: 1000 buckets exceed "
                      "the vocab 999 of table 'emb/weight'"));
  CHECK_NOTHROW(check_buckets_fit_vocab(inputs[1], 0, "t"));  // numeric ("n"): nothing to check
  CHECK_NOTHROW(check_buckets_fit_vocab(inputs[2], 64, "t"));
  CHECK_THROWS_MATCHES(
      check_buckets_fit_vocab(inputs[2], 63, "s/weight"), fedleaf::InvalidInput,
      MessageContains("plan.model.inputs.s.features.hash_buckets: 64 buckets exceed "
                      "the vocab 63 of table 's/weight'"));
}
