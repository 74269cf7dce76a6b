// Finite-difference checks of every layer's and loss's backward pass, through whole models.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/data/batch.h"
#include "core/model/model.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;

namespace {

std::string plan_for(const std::string& model) {
  return R"({"kind": "evaluate", "model": )" + model + "}";
}

double mean_loss(Model& model, const Batch& batch) {
  return model.forward(batch).loss / static_cast<double>(batch.size);
}

// Compares the model's analytic gradient of the mean loss with central differences, for every
// element of every dense parameter and of every embedding row (touched or not).
void check_gradients(const std::string& plan_json, const Dataset& data, std::uint64_t seed) {
  const Plan plan = parse_plan(plan_json);
  Parameters params = fedleaf::test::initial_parameters(plan_json, seed);
  Model model(plan.model, params, data.size());
  BatchGatherer gather(data, BatchIds::kGlobal);
  const auto order = fedleaf::test::identity_order(data.size());
  const Batch batch = gather.gather(order.data(), order.size());
  model.forward_backward(batch);
  const std::vector<ParameterGradient> analytic = model.gradients();

  const float eps = 1e-3f;
  for (const ParameterGradient& g : analytic) {
    for (std::size_t row = 0; row < g.rows; ++row) {
      const float* grad_row = nullptr;
      if (g.row_sparse) {
        const auto it = std::find(g.touched_rows.begin(), g.touched_rows.end(), row);
        if (it != g.touched_rows.end()) {
          grad_row = g.values.data() + (it - g.touched_rows.begin()) * g.row_size;
        }
      } else {
        grad_row = g.values.data() + row * g.row_size;
      }
      for (std::size_t k = 0; k < g.row_size; ++k) {
        float& p = g.parameter[row * g.row_size + k];
        const float saved = p;
        p = saved + eps;
        const double plus = mean_loss(model, batch);
        p = saved - eps;
        const double minus = mean_loss(model, batch);
        p = saved;
        const double numeric = (plus - minus) / (2.0 * eps);
        const double value = grad_row ? grad_row[k] : 0.0;
        INFO(g.name << " row " << row << " col " << k << " analytic " << value << " numeric "
                    << numeric);
        CHECK(std::fabs(value - numeric) <= 2e-3 + 3e-2 * std::fabs(numeric));
      }
    }
  }
}

}  // namespace

TEST_CASE("embedding_bag_and_dense_gradients_match_finite_differences_for_each_combiner",
          "[gradient]") {
  for (const char* combiner : {"sum", "mean", "sqrtn"}) {
    INFO(combiner);
    const std::string plan = plan_for(std::string(R"({"inputs": {"t": "sparse_ids"}, "layers": [
          {"type": "embedding_bag", "name": "emb", "vocab": 12, "dim": 3, "init_scale": 0.5,
           "combiner": ")") + combiner +
                                      R"("},
          {"type": "dense", "name": "out", "units": 3}], "loss": "softmax_cross_entropy"})");
    check_gradients(plan, fedleaf::test::random_sparse_dataset(1, 6, 12, 5, true, 3), 11);
  }
}

TEST_CASE("activation_gradients_match_finite_differences", "[gradient]") {
  for (const char* activation : {"relu", "sigmoid", "tanh"}) {
    INFO(activation);
    const std::string plan =
        plan_for(std::string(R"({"inputs": {"x": {"type": "dense", "dim": 4}}, "layers": [
          {"type": "dense", "name": "h", "units": 5, "activation": ")") +
                 activation + R"("},
          {"type": "dense", "name": "out", "units": 3}], "loss": "softmax_cross_entropy"})");
    check_gradients(plan, fedleaf::test::random_dense_dataset(2, 7, 4, 3), 12);
  }
}

TEST_CASE("standalone_activation_layers_and_sigmoid_loss_match_finite_differences", "[gradient]") {
  const std::string plan = plan_for(R"({"inputs": {"t": "sparse_ids"}, "layers": [
      {"type": "embedding_bag", "name": "emb", "vocab": 9, "dim": 4, "combiner": "sqrtn",
       "init_scale": 0.8},
      {"type": "tanh"},
      {"type": "dense", "name": "h", "units": 3, "use_bias": false},
      {"type": "sigmoid"},
      {"type": "dense", "name": "out", "units": 1}], "loss": "sigmoid_cross_entropy"})");
  check_gradients(plan, fedleaf::test::random_sparse_dataset(3, 8, 9, 4, true, 2), 13);
}

TEST_CASE("sparse_logistic_regression_gradient_matches_finite_differences", "[gradient]") {
  const std::string plan = plan_for(R"({"inputs": {"t": "sparse_ids"}, "layers": [
      {"type": "embedding_bag", "name": "lr", "vocab": 15, "dim": 1, "combiner": "sum",
       "init_scale": 0.7}], "loss": "sigmoid_cross_entropy"})");
  check_gradients(plan, fedleaf::test::random_sparse_dataset(4, 10, 15, 6, true, 2), 14);
}

TEST_CASE("fused_sparse_sgd_steps_the_tables_and_leaves_dense_gradients_to_the_optimizer",
          "[model]") {
  const std::string plan_json = plan_for(R"({"inputs": {"t": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "emb", "vocab": 20, "dim": 4,
                  "combiner": "mean"},
                 {"type": "dense", "name": "out", "units": 3}],
      "loss": "softmax_cross_entropy"})");
  const Plan plan = parse_plan(plan_json);
  const Dataset data = fedleaf::test::random_sparse_dataset(5, 6, 20, 5, true, 3);
  BatchGatherer gather(data, BatchIds::kGlobal);
  const auto order = fedleaf::test::identity_order(data.size());
  const Batch batch = gather.gather(order.data(), order.size());
  Parameters separate = fedleaf::test::initial_parameters(plan_json, 3);
  Parameters fused = separate;
  Model reference(plan.model, separate, data.size());
  Model model(plan.model, fused, data.size());
  model.fuse_sparse_sgd(0.5f);

  reference.forward_backward(batch);
  model.forward_backward(batch);

  const ParameterGradient& table_gradient = reference.gradients()[0];
  float* table = table_gradient.parameter;
  for (std::size_t r = 0; r < table_gradient.touched_rows.size(); ++r) {
    for (std::size_t k = 0; k < 4; ++k) {
      table[table_gradient.touched_rows[r] * 4 + k] -= 0.5f * table_gradient.values[r * 4 + k];
    }
  }
  CHECK(model.gradients()[0].touched_rows.empty());
  CHECK(model.gradients()[0].values.empty());
  const float* stepped = fused.at("emb/weight").data<float>();
  for (std::size_t i = 0; i < 20 * 4; ++i) REQUIRE(stepped[i] == Approx(table[i]).margin(1e-6));
  for (std::size_t g = 1; g < 3; ++g) {
    CHECK(model.gradients()[g].values == reference.gradients()[g].values);
  }
}
