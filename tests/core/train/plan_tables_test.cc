// The facts a plan's parse derives once (Plan::tables: core/train/plan_tables.h) and the entry
// points taking a parsed Plan: the same bytes as from the plan's JSON, with the plan shared by
// whatever outlives the call (a session).
#include <catch2/catch.hpp>

#include <memory>

#include "core/data/seeded_random.h"
#include "core/train/executor.h"
#include "core/train/plan.h"
#include "core/train/predict.h"
#include "core/train/table_rows.h"
#include "core/train/training_session.h"
#include "tests/core/error_matchers.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

// Table "words" read by two lookups on two inputs (body, title), table "site" by one on a third;
// "words" downloads by select, "site" whole.
const char* kPlan = R"({"model": {
    "inputs": {"title": "sparse_ids", "site": "sparse_ids", "body": "sparse_ids"},
    "layers": [
      {"type": "embedding_bag", "name": "words", "input": "body", "vocab": 40, "dim": 3},
      {"type": "embedding_bag", "name": "site_emb", "input": "site", "vocab": 9, "dim": 2},
      {"type": "embedding_bag", "name": "title_emb", "input": "title", "table": "words"},
      {"type": "concatenate", "name": "all", "inputs": ["words", "site_emb", "title_emb"]},
      {"type": "dense", "name": "out", "units": 1}],
    "loss": "sigmoid_cross_entropy"},
  "train": {"optimizer": {"type": "adam", "learning_rate": 0.05}, "batch_size": 3},
  "updates": {"words/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
              "site_emb/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
              "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
              "out/bias": {"encoding": "dense", "aggregator": "weighted_mean"}}})";

Dataset data(std::uint64_t seed, std::size_t n) {
  SeededRandom rng(seed);
  std::vector<InputColumns> inputs;
  inputs.push_back(fedleaf::test::random_sparse_input("body", rng, n, 40, 5, true));
  inputs.push_back(fedleaf::test::random_sparse_input("site", rng, n, 9, 1, false));
  inputs.push_back(fedleaf::test::random_sparse_input("title", rng, n, 40, 3, false));
  std::vector<std::int32_t> labels;
  for (std::size_t i = 0; i < n; ++i) labels.push_back(static_cast<std::int32_t>(rng.below(2)));
  return Dataset::from_inputs(std::move(inputs), labels);
}

}  // namespace

TEST_CASE("a plan's tables: owner, lookups, feeding inputs and shape, by owner layer",
          "[plan_tables]") {
  const Plan plan = parse_plan(kPlan);
  REQUIRE(plan.tables.size() == 2);
  const PlanTable& words = plan.tables[0];
  CHECK(words.parameter == "words/weight");
  CHECK(plan.model.layers[words.owner].name == "words");
  REQUIRE(words.lookups.size() == 2);
  CHECK(plan.model.layers[words.lookups[1]].name == "title_emb");
  // Inputs in first-read order (body by "words", then title), as model input indices.
  REQUIRE(words.inputs.size() == 2);
  CHECK(plan.model.inputs[words.inputs[0]].name == "body");
  CHECK(plan.model.inputs[words.inputs[1]].name == "title");
  CHECK((words.vocab == 40 && words.dim == 3));
  const PlanTable& site = plan.tables[1];
  CHECK(site.parameter == "site_emb/weight");
  CHECK(site.lookups == std::vector<std::size_t>{site.owner});
  CHECK(site.inputs.size() == 1);
  CHECK((site.vocab == 9 && site.dim == 2));
  CHECK(&find_table(plan.tables, "site_emb/weight") == &site);
  CHECK_THROWS_MATCHES(find_table(plan.tables, "title_emb/weight"), fedleaf::InvalidInput,
                       MessageContains("'title_emb/weight' is no embedding table of the model "
                                       "(tables: words/weight, site_emb/weight)"));
  // A dense-only model has none; a one-input chain plan its one table on its one input.
  CHECK(parse_plan(R"({"kind": "evaluate", "model": {"inputs": {"x": {"type": "dense", "dim": 2}},
      "layers": [{"type": "dense", "name": "d", "units": 1}], "loss": "sigmoid_cross_entropy"}})")
            .tables.empty());
  const Plan one = parse_plan(fedleaf::test::kDesignPlan);
  REQUIRE(one.tables.size() == 1);
  CHECK(one.tables[0].parameter == "emb/weight");
  CHECK(one.tables[0].inputs == std::vector<std::size_t>{0});
}

TEST_CASE("the entry points give the same bytes from a parsed plan as from its JSON",
          "[plan_tables]") {
  const auto plan = std::make_shared<const Plan>(parse_plan(kPlan));
  const std::vector<std::uint8_t> model = initialize_model(kPlan, 4);
  CHECK(initialize_model_from(*plan, 4) == model);
  const Dataset d = data(2, 11);
  const std::vector<std::uint8_t> trained = execute(kPlan, model.data(), model.size(), d);
  CHECK(execute(plan, model.data(), model.size(), d) == trained);
  CHECK(predict(*plan, model.data(), model.size(), d).probabilities ==
        predict(kPlan, model.data(), model.size(), d).probabilities);
  std::string eval_json = kPlan;
  eval_json.replace(0, 1, R"({"kind": "evaluate", )");
  CHECK(evaluate(*plan, model.data(), model.size(), d) ==
        execute(eval_json, model.data(), model.size(), d));
  CHECK(table_distinct_ids(*plan, d, "site_emb/weight") == d.distinct_ids(1).rows());

  // The session shares the plan: the caller's pointer may go first.
  std::shared_ptr<const Plan> held = std::make_shared<const Plan>(parse_plan(kPlan));
  TrainingSession session(held, model.data(), model.size(), d);
  held.reset();
  while (session.step()) {
  }
  CHECK(session.result() == trained);
}

TEST_CASE("a session refuses a plan parsed for inference that has no train section",
          "[plan_tables]") {
  std::string json = kPlan;
  json.replace(json.find(R"("train")"), json.find(R"("updates")") - json.find(R"("train")"), "");
  const auto plan = std::make_shared<const Plan>(parse_plan(json, PlanUse::kInference));
  const std::vector<std::uint8_t> model = initialize_model_from(*plan, 1);
  const Dataset d = data(3, 4);
  CHECK_THROWS_MATCHES(TrainingSession(plan, model.data(), model.size(), d), fedleaf::InvalidInput,
                       MessageContains("plan.train: missing"));
}
