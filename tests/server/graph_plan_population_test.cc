// A population's plan whose model is a layer graph (issue 29) is validated at creation by the
// core's parse_plan: a valid graph is accepted, a broken one is InvalidInput (400) naming the
// layer and the rule.
#include <catch2/catch.hpp>

#include "server/repository/new_population.h"
#include "tests/core/error_matchers.h"

namespace fedleaf::server {
namespace {

PopulationSpec spec_with_model(const std::string& model) {
  PopulationSpec spec;
  spec.id = "graph";
  spec.plan_json = R"({"model": )" + model + R"(,
      "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}},
      "updates": {"tokens/weight": {"encoding": "row_sparse",
                                    "aggregator": "mean_over_contributors"}}})";
  spec.settings.rounds = 1;
  spec.settings.clients_per_round = 1;
  spec.settings.min_reports = 1;
  spec.settings.round_deadline_s = 30;
  spec.settings.lease_s = 10;
  spec.settings.train_tasks_per_round = 1;
  return spec;
}

std::string graph(const std::string& subject_dim) {
  return R"({"inputs": {"body": "sparse_ids", "subject": "sparse_ids"},
      "layers": [
        {"type": "embedding_bag", "name": "tokens", "input": "body", "vocab": 100, "dim": 4},
        {"type": "embedding_bag", "name": "subject_emb", "input": "subject", "table": "tokens",
         "dim": )" +
         subject_dim + R"(},
        {"type": "add", "name": "sum", "inputs": ["tokens", "subject_emb"]},
        {"type": "dense", "name": "out", "units": 1}],
      "loss": "sigmoid_cross_entropy"})";
}

}  // namespace

TEST_CASE("population_plans_with_a_model_graph_are_validated_at_creation", "[new_population]") {
  const PopulationPlan plan = parse_population_plan(spec_with_model(graph("4")));
  CHECK(plan.parsed.model.inputs.size() == 2);
  CHECK_THROWS_MATCHES(parse_population_plan(spec_with_model(graph("8"))), InvalidInput,
                       test::MessageContains("plan.model.layers[1].table: 'tokens' has dim 4, "
                                             "this layer says dim 8"));
}

}  // namespace fedleaf::server

namespace fedleaf::server {

TEST_CASE("population_plans_with_input_features_are_validated_at_creation", "[new_population]") {
  const auto model = [](const std::string& features) {
    return R"({"inputs": {"body": {"type": "sparse_ids", "features": )" + features + R"(}},
        "layers": [
          {"type": "embedding_bag", "name": "tokens", "vocab": 100, "dim": 4},
          {"type": "dense", "name": "out", "units": 1}],
        "loss": "sigmoid_cross_entropy"})";
  };
  const PopulationPlan plan =
      parse_population_plan(spec_with_model(model(R"({"text": "body", "num_buckets": 100})")));
  REQUIRE(plan.parsed.input_features.size() == 1);
  CHECK(plan.parsed.input_features[0].text.num_buckets == 100);
  CHECK_THROWS_MATCHES(
      parse_population_plan(
          spec_with_model(model(R"({"column": "sender", "hash_buckets": 4096})"))),
      InvalidInput,
      test::MessageContains("plan.model.inputs.body.features.hash_buckets: 4096 buckets exceed the "
                            "vocab 100 of table 'tokens/weight'"));
  CHECK_THROWS_MATCHES(
      parse_population_plan(spec_with_model(model(R"({"column": "sender"})"))), InvalidInput,
      test::MessageContains("plan.model.inputs.body.features.hash_buckets: missing"));
}

}  // namespace fedleaf::server
