// parse_plan validates each input's "features" (issue 29) through the records featurizer's parser
// (core/features/input_features.h) and checks its buckets against every table the input feeds.
#include <catch2/catch.hpp>
#include <string>

#include "core/train/plan.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

// Sparse inputs "a" (features `a_features`) and "b" (features `b_features`, none when empty),
// dense "n" (dim 2, features `n_features`, none when empty). "a" feeds table "emb" (vocab 100);
// "b" feeds "emb" too (the shared lookup "again") and table "small" (vocab `small_vocab`).
std::string plan(const std::string& a_features, const std::string& b_features = "",
                 const std::string& n_features = "", int small_vocab = 50) {
  const std::string b = b_features.empty()
                            ? R"("sparse_ids")"
                            : R"({"type": "sparse_ids", "features": )" + b_features + "}";
  const std::string n = n_features.empty()
                            ? R"({"type": "dense", "dim": 2})"
                            : R"({"type": "dense", "dim": 2, "features": )" + n_features + "}";
  return R"({"model": {"inputs": {
      "a": {"type": "sparse_ids", "features": )" +
         a_features + R"(},
      "b": )" +
         b + R"(,
      "n": )" +
         n + R"(},
    "layers": [
      {"type": "embedding_bag", "name": "emb", "input": "a", "vocab": 100, "dim": 4},
      {"type": "embedding_bag", "name": "again", "input": "b", "table": "emb"},
      {"type": "embedding_bag", "name": "small", "input": "b", "vocab": )" +
         std::to_string(small_vocab) + R"(, "dim": 4},
      {"type": "concatenate", "name": "cat", "inputs": ["emb", "again", "small", "n"]},
      {"type": "dense", "name": "out", "units": 1}],
    "loss": "sigmoid_cross_entropy"},
    "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}},
    "updates": {"out/bias": {"encoding": "dense", "aggregator": "sum"}}})";
}

const std::string kColumn100 = R"({"column": "domain", "hash_buckets": 100})";

void check_rejects(const std::string& text, const std::string& fragment) {
  INFO(text);
  CHECK_THROWS_MATCHES(parse_plan(text), fedleaf::InvalidInput, MessageContains(fragment));
}

}  // namespace

TEST_CASE("plan_input_features_are_parsed_once_into_the_plan", "[plan][features]") {
  const Plan p = parse_plan(plan(kColumn100, "", R"({"numeric": [{"field": "x"},
      {"field": "y", "transform": "log1p"}]})"));
  REQUIRE(p.input_features.size() == 2);
  CHECK(p.input_features[0].input == "a");
  CHECK(p.input_features[0].kind == FeatureKind::kColumn);
  CHECK(p.input_features[0].hash_buckets == 100);
  CHECK(p.input_features[1].input == "n");
  CHECK(p.input_features[1].kind == FeatureKind::kNumeric);
  CHECK(p.input_features[1].numeric.size() == 2);
  CHECK(p.model.inputs[0].features_json.find("domain") != std::string::npos);
  // Only the inputs with "features" are listed.
  CHECK(parse_plan(plan(kColumn100)).input_features.size() == 1);
}

TEST_CASE("plan_input_features_are_checked_by_the_records_featurizer_parser", "[plan][features]") {
  check_rejects(plan(R"({"column": "domain"})"),
                "plan.model.inputs.a.features.hash_buckets: missing");
  check_rejects(plan(R"({"column": "domain", "hash_buckets": 10, "ngrams": 2})"),
                "plan.model.inputs.a.features: unknown field 'ngrams'");
  check_rejects(plan(R"({"text": "body", "column": "domain", "hash_buckets": 10})"),
                "plan.model.inputs.a.features: expected exactly one of");
  check_rejects(plan(kColumn100, "", R"({"numeric": [{"field": "x"}]})"),
                "plan.model.inputs.n.features.numeric: 1 entries for an input of dim 2");
  check_rejects(plan(R"({"numeric": [{"field": "x"}]})"),
                "plan.model.inputs.a.type: numeric features make a dense input");
}

TEST_CASE("plan_input_buckets_must_fit_the_vocab_of_every_table_the_input_feeds",
          "[plan][features]") {
  // Its own table: hash_buckets, and a text feature's num_buckets.
  check_rejects(plan(R"({"column": "domain", "hash_buckets": 101})"),
                "plan.model.inputs.a.features.hash_buckets: 101 buckets exceed the vocab 100 of "
                "table 'emb/weight' (an id would fall outside the table)");
  check_rejects(plan(R"({"text": "body", "num_buckets": 128})"),
                "plan.model.inputs.a.features.num_buckets: 128 buckets exceed the vocab 100 of "
                "table 'emb/weight'");
  check_rejects(plan(R"({"text": "body"})"),
                "plan.model.inputs.a.features.num_buckets: 262144 buckets exceed the vocab 100");
  // "b" feeds the shared table "emb" (vocab 100) and "small": both must hold its ids.
  CHECK_NOTHROW(parse_plan(plan(kColumn100, R"({"cross": ["x", "y"], "hash_buckets": 50})")));
  check_rejects(plan(kColumn100, R"({"cross": ["x", "y"], "hash_buckets": 60})"),
                "plan.model.inputs.b.features.hash_buckets: 60 buckets exceed the vocab 50 of "
                "table 'small/weight'");
  check_rejects(plan(kColumn100, R"({"column": "z", "hash_buckets": 120})", "", 200),
                "plan.model.inputs.b.features.hash_buckets: 120 buckets exceed the vocab 100 of "
                "table 'emb/weight'");
}

TEST_CASE("a_one_input_plans_text_buckets_must_fit_its_table", "[plan][features]") {
  // The top-level "features" featurize texts into the only input's ids.
  auto text_plan = [](const std::string& features) {
    return R"({"model": {"inputs": {"tokens": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "emb", "vocab": 1000, "dim": 4},
                 {"type": "dense", "name": "out", "units": 1}],
      "loss": "sigmoid_cross_entropy"},
      "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}},
      "updates": {"emb/weight": {"encoding": "row_sparse", "aggregator": "sum"}},
      "features": )" +
           features + "}";
  };
  CHECK(parse_plan(text_plan(R"({"num_buckets": 1000})")).features->num_buckets == 1000);
  check_rejects(text_plan(R"({"num_buckets": 65536})"),
                "plan.features.num_buckets: 65536 buckets exceed the vocab 1000 of table "
                "'emb/weight' (an id would fall outside the table)");
  // The default 2^18 buckets too, once "features" is given; a plan without it may take ids.
  check_rejects(text_plan(R"({"ngrams": 2})"),
                "plan.features.num_buckets: 262144 buckets exceed the vocab 1000");
}
