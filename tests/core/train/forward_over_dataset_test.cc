#include "core/train/forward_over_dataset.h"

#include <catch2/catch.hpp>
#include <utility>
#include <variant>
#include <vector>

#include "core/error.h"
#include "core/train/executor.h"
#include "core/train/predict.h"
#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"
#include "tests/core/train/train_test_util.h"

namespace fedleaf {

using core::Model;

TEST_CASE("forward_over_dataset_visits_every_example_once_in_order_in_eval_batches", "[forward]") {
  core::Plan plan = core::parse_plan(test::kDesignPlan);
  plan.eval_batch_size = 4;
  const core::Dataset data = test::random_sparse_dataset(3, 10, 262144, 6, false, 2);
  const std::vector<std::uint8_t> model = core::initialize_model(test::kDesignPlan, 5);
  std::vector<std::pair<std::size_t, std::size_t>> batches;
  std::vector<float> logits;

  core::forward_over_dataset(
      plan, model.data(), model.size(), data,
      [&](const Model& m, std::size_t first, std::size_t count, const core::LossSums&) {
        batches.emplace_back(first, count);
        logits.insert(logits.end(), m.outputs(), m.outputs() + count * m.output_width());
      });

  CHECK(batches == std::vector<std::pair<std::size_t, std::size_t>>{{0, 4}, {4, 4}, {8, 2}});
  // The same logits predict() turns into probabilities: row by row, softmax of them.
  const core::Predictions p = core::predict(test::kDesignPlan, model.data(), model.size(), data);
  REQUIRE(logits.size() == 20);
  for (std::size_t e = 0; e < 10; ++e) {
    const bool first_larger = logits[2 * e] > logits[2 * e + 1];
    CHECK(first_larger == (p.probabilities[2 * e] > p.probabilities[2 * e + 1]));
  }
}

TEST_CASE("forward_over_dataset_rejects_a_model_that_lacks_a_declared_tensor", "[forward]") {
  const core::Plan plan = core::parse_plan(test::kDesignPlan);
  const core::Dataset data = test::random_sparse_dataset(3, 4, 262144, 6, false, 2);
  core::NamedTensors tensors =
      core::read_safetensors(core::initialize_model(test::kDesignPlan, 5)).tensors;
  tensors.erase("out/bias");
  const std::vector<std::uint8_t> bytes = core::write_safetensors(tensors);
  bool visited = false;

  CHECK_THROWS_MATCHES(core::forward_over_dataset(plan, bytes.data(), bytes.size(), data,
                                                  [&](const Model&, std::size_t, std::size_t,
                                                      const core::LossSums&) { visited = true; }),
                       InvalidInput, test::MessageContains("model: missing tensor 'out/bias'"));
  CHECK_FALSE(visited);
}

// Regression: finite parameters near FLT_MAX overflowed the logits; predict() returned NaN
// probabilities and evaluate hung in binary_auc.
TEST_CASE("forward_over_dataset_rejects_outputs_that_overflow_float", "[forward]") {
  const core::Plan plan = core::parse_plan(test::kDesignPlan);
  const core::Dataset data = test::random_sparse_dataset(3, 4, 262144, 6, false, 2);
  core::NamedTensors tensors =
      core::read_safetensors(core::initialize_model(test::kDesignPlan, 5)).tensors;
  for (auto& [name, tensor] : tensors) {
    auto& dense = std::get<core::DenseTensor>(tensor);
    float* values = dense.data<float>();
    for (std::size_t i = 0; i < dense.size(); ++i) values[i] = 3e38f;
  }
  const std::vector<std::uint8_t> bytes = core::write_safetensors(tensors);
  bool visited = false;

  CHECK_THROWS_MATCHES(
      core::forward_over_dataset(
          plan, bytes.data(), bytes.size(), data,
          [&](const Model&, std::size_t, std::size_t, const core::LossSums&) { visited = true; }),
      InvalidInput, test::MessageContains("model: the outputs for example 0 are not finite"));
  CHECK_FALSE(visited);
  CHECK_THROWS_MATCHES(core::predict(test::kDesignPlan, bytes.data(), bytes.size(), data),
                       InvalidInput, test::MessageContains("are not finite"));
}

}  // namespace fedleaf
