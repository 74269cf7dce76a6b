// Finite-difference checks of the graph layers (concatenate, add, multiply, dropout) and of
// mean_squared_error, alone and through whole multi-input models with a shared table.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/data/batch.h"
#include "core/model/add_layer.h"
#include "core/model/concatenate.h"
#include "core/model/dropout.h"
#include "core/model/loss.h"
#include "core/model/model.h"
#include "core/model/multiply_layer.h"
#include "core/train/forward_over_dataset.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::random_dense_input;
using fedleaf::test::random_sparse_input;

namespace {

std::vector<float> random_values(SeededRandom& rng, std::size_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = 2.0f * rng.uniform() - 1.0f;
  return v;
}

// Checks d f / d x[i] against central differences for every i, f(x) a scalar.
void check_against_differences(std::vector<float>& x, const std::vector<float>& analytic,
                               const std::function<double()>& f) {
  const float eps = 1e-3f;
  REQUIRE(analytic.size() == x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = saved + eps;
    const double plus = f();
    x[i] = saved - eps;
    const double minus = f();
    x[i] = saved;
    const double numeric = (plus - minus) / (2.0 * eps);
    INFO("element " << i << " analytic " << analytic[i] << " numeric " << numeric);
    CHECK(std::fabs(analytic[i] - numeric) <= 1e-3 + 1e-2 * std::fabs(numeric));
  }
}

// Σ c_i y_i: a scalar function of a layer's output, whose gradient is c.
double weighted_sum(const std::vector<float>& y, const std::vector<float>& c) {
  double s = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y[i]) * c[i];
  return s;
}

// Compares a model's analytic gradient of a training step's mean loss with central differences
// of forward_training (the same dropout masks), for every parameter element.
void check_model_gradients(const std::string& plan_json, const Dataset& data, std::uint64_t seed) {
  const Plan plan = parse_plan(plan_json, PlanUse::kInference);
  Parameters params = fedleaf::test::initial_parameters(plan_json, seed);
  Model model(plan.model, params, data.size());
  std::vector<std::vector<std::uint32_t>> global;
  BatchGatherer gather(data, global_feed_sources(plan.model, data, global));
  const auto order = fedleaf::test::identity_order(data.size());
  const Batch batch = gather.gather(order.data(), order.size());
  const auto mean_loss = [&] {
    return model.forward_training(batch).loss / static_cast<double>(batch.size);
  };
  // The step-0 masks, as forward_backward draws them next.
  std::vector<std::pair<std::string, std::vector<double>>> numeric;
  const float eps = 1e-3f;
  for (auto& [name, tensor] : params) {
    std::vector<double> d(tensor.size());
    float* p = tensor.data<float>();
    for (std::size_t i = 0; i < tensor.size(); ++i) {
      const float saved = p[i];
      p[i] = saved + eps;
      const double plus = mean_loss();
      p[i] = saved - eps;
      const double minus = mean_loss();
      p[i] = saved;
      d[i] = (plus - minus) / (2.0 * eps);
    }
    numeric.emplace_back(name, std::move(d));
  }
  model.forward_backward(batch);
  for (const ParameterGradient& g : model.gradients()) {
    const auto it = std::find_if(numeric.begin(), numeric.end(),
                                 [&](const auto& n) { return n.first == g.name; });
    REQUIRE(it != numeric.end());
    for (std::size_t row = 0; row < g.rows; ++row) {
      const float* grad_row = nullptr;
      if (g.row_sparse) {
        const auto r = std::find(g.touched_rows.begin(), g.touched_rows.end(), row);
        if (r != g.touched_rows.end()) {
          grad_row = g.values.data() + (r - g.touched_rows.begin()) * g.row_size;
        }
      } else {
        grad_row = g.values.data() + row * g.row_size;
      }
      for (std::size_t k = 0; k < g.row_size; ++k) {
        const double value = grad_row ? grad_row[k] : 0.0;
        const double n = it->second[row * g.row_size + k];
        INFO(g.name << " row " << row << " col " << k << " analytic " << value << " numeric " << n);
        CHECK(std::fabs(value - n) <= 2e-3 + 3e-2 * std::fabs(n));
      }
    }
  }
}

const char* kSharedTableGraph = R"({"kind": "evaluate", "model": {
    "inputs": {"a": "sparse_ids", "c": "sparse_ids", "x": {"type": "dense", "dim": 3}},
    "layers": [
      {"type": "embedding_bag", "name": "e", "input": "a", "vocab": 8, "dim": 3,
       "combiner": "sum", "init_scale": 0.5},
      {"type": "embedding_bag", "name": "f", "input": "c", "table": "e", "combiner": "mean"},
      {"type": "embedding_bag", "name": "w", "input": "c", "vocab": 8, "dim": 1,
       "combiner": "sum", "init_scale": 0.5},
      {"type": "concatenate", "name": "j", "inputs": ["e", "f", "x"]},
      {"type": "dense", "name": "h", "units": 4, "activation": "tanh"},
      {"type": "dropout", "name": "d", "rate": 0.3, "seed": 5},
      {"type": "dense", "name": "o", "units": 1},
      {"type": "add", "name": "s", "inputs": ["o", "w"]}],
    "loss": "sigmoid_cross_entropy"}})";

Dataset shared_table_data(std::uint64_t seed, std::size_t n) {
  SeededRandom rng(seed);
  std::vector<InputColumns> inputs;
  inputs.push_back(random_sparse_input("a", rng, n, 8, 4, true));
  inputs.push_back(random_sparse_input("c", rng, n, 8, 3, false));
  inputs.push_back(random_dense_input("x", rng, n, 3));
  std::vector<std::int32_t> labels(n);
  for (auto& l : labels) l = static_cast<std::int32_t>(rng.below(2));
  return Dataset::from_inputs(std::move(inputs), labels);
}

}  // namespace

TEST_CASE("concatenate_add_and_dropout_backward_match_finite_differences", "[graph_gradient]") {
  SeededRandom rng(3);
  const std::size_t batch = 3;
  std::vector<float> a = random_values(rng, batch * 2), b = random_values(rng, batch * 3);
  const std::vector<float> c = random_values(rng, batch * 5);
  std::vector<float> y(batch * 5);
  const auto concat_f = [&] {
    concatenate_forward({a.data(), b.data()}, {2, 3}, batch, y.data());
    return weighted_sum(y, c);
  };
  std::vector<float> ga(batch * 2), gb(batch * 3);
  concatenate_backward(c.data(), 5, 0, 2, batch, ga.data());
  concatenate_backward(c.data(), 5, 2, 3, batch, gb.data());
  check_against_differences(a, ga, concat_f);
  check_against_differences(b, gb, concat_f);

  std::vector<float> p = random_values(rng, 6), q = random_values(rng, 6);
  const std::vector<float> w = random_values(rng, 6);
  std::vector<float> s(6);
  const auto add_f = [&] {
    add_forward({p.data(), q.data(), p.data()}, 6, s.data());
    return weighted_sum(s, w);
  };
  // p is read twice: its gradient is the sum of both reads' (each is gy).
  std::vector<float> gp(6), gq = w;
  for (std::size_t i = 0; i < 6; ++i) gp[i] = 2.0f * w[i];
  check_against_differences(p, gp, add_f);
  check_against_differences(q, gq, add_f);

  std::vector<float> mask(batch * 4);
  dropout_mask(9, 2, batch, 4, 0.5f, mask.data());
  std::vector<float> x = random_values(rng, batch * 4), dy(batch * 4);
  const std::vector<float> cd = random_values(rng, batch * 4);
  const auto dropout_f = [&] {
    dropout_forward(x.data(), mask.data(), x.size(), dy.data());
    return weighted_sum(dy, cd);
  };
  std::vector<float> gx(batch * 4);
  dropout_backward(cd.data(), mask.data(), cd.size(), gx.data());
  check_against_differences(x, gx, dropout_f);
}

TEST_CASE("mean_squared_error_gradient_matches_finite_differences", "[graph_gradient]") {
  SeededRandom rng(4);
  const std::size_t batch = 4, width = 3;
  std::vector<float> out = random_values(rng, batch * width);
  const std::vector<float> targets = random_values(rng, batch * width);
  std::vector<float> grad(batch * width);
  const LossSums sums =
      mean_squared_error(out.data(), targets.data(), batch, width, 1.0f / batch, grad.data());
  double expected = 0.0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    expected += (out[i] - targets[i]) * (out[i] - targets[i]) / width;
  }
  CHECK(sums.loss == Approx(expected).epsilon(1e-6));
  CHECK(sums.correct == 0);
  check_against_differences(out, grad, [&] {
    return mean_squared_error(out.data(), targets.data(), batch, width, 0.0f, nullptr).loss /
           static_cast<double>(batch);
  });
}

TEST_CASE("shared_table_concatenate_dropout_add_graph_gradients_match_finite_differences",
          "[graph_gradient]") {
  check_model_gradients(kSharedTableGraph, shared_table_data(21, 7), 13);
}

TEST_CASE("regression_graph_gradients_match_finite_differences", "[graph_gradient]") {
  // A layer read three times (g: by the add, the concatenate and the output's add) and a dense
  // input read twice: their gradients sum.
  const char* plan = R"({"kind": "evaluate", "model": {
      "inputs": {"a": "sparse_ids", "x": {"type": "dense", "dim": 2}},
      "layers": [
        {"type": "embedding_bag", "name": "e", "input": "a", "vocab": 6, "dim": 2,
         "combiner": "sqrtn", "init_scale": 0.5},
        {"type": "dense", "name": "g", "input": "x", "units": 2, "activation": "sigmoid"},
        {"type": "add", "name": "s", "inputs": ["e", "g"]},
        {"type": "concatenate", "name": "j", "inputs": ["s", "x", "g"]},
        {"type": "dense", "name": "out", "units": 2},
        {"type": "add", "name": "y", "inputs": ["out", "g"]}],
      "loss": "mean_squared_error"}})";
  SeededRandom rng(8);
  const std::size_t n = 5;
  std::vector<InputColumns> inputs;
  inputs.push_back(random_sparse_input("a", rng, n, 6, 3, true));
  inputs.push_back(random_dense_input("x", rng, n, 2));
  Dataset data =
      Dataset::from_inputs(std::move(inputs), Dataset::Targets{random_values(rng, n * 2), 2});
  check_model_gradients(plan, data, 17);
}

TEST_CASE("dropout_masks_are_pinned_deterministic_and_keep_one_minus_rate", "[graph_gradient]") {
  // Pinned: the same on every platform (this suite also runs under wasm).
  std::string bits;
  for (std::uint64_t unit = 0; unit < 24; ++unit)
    bits += dropout_keeps(7, 3, 1, unit, 0.5f) ? '1' : '0';
  CHECK(bits == "100000010110010101100000");
  std::vector<float> mask(200 * 50);
  dropout_mask(1, 0, 200, 50, 0.2f, mask.data());
  std::size_t kept = 0;
  for (std::size_t b = 0; b < 200; ++b) {
    for (std::size_t u = 0; u < 50; ++u) {
      const float m = mask[b * 50 + u];
      CHECK((m == 0.0f || m == 1.0f / 0.8f));
      CHECK((m != 0.0f) == dropout_keeps(1, 0, b, u, 0.2f));
      kept += m != 0.0f;
    }
  }
  CHECK(kept > 7800);
  CHECK(kept < 8200);
  // Another step, seed or rate draws another mask; rate 0 keeps everything.
  CHECK(dropout_keeps(1, 0, 0, 0, 0.0f));
  std::vector<float> other(mask.size());
  dropout_mask(1, 1, 200, 50, 0.2f, other.data());
  CHECK(other != mask);
}

TEST_CASE("dense_on_sparse_bias_gradients_match_finite_differences", "[graph_gradient]") {
  // Keras' Dense on a sparse input as embedding_bag sum + bias (dim 3 through tanh, and a dim 1
  // linear part on the same input with its own table), next to a mean embedding; examples
  // without ids get the bias alone, and their gradient reaches it.
  const char* plan = R"({"kind": "evaluate", "model": {
      "inputs": {"s": "sparse_ids", "t": "sparse_ids"},
      "layers": [
        {"type": "embedding_bag", "name": "wide", "input": "s", "vocab": 8, "dim": 3,
         "combiner": "sum", "use_bias": true, "init_scale": 0.5},
        {"type": "tanh", "name": "wt"},
        {"type": "embedding_bag", "name": "emb", "input": "t", "vocab": 6, "dim": 2,
         "init_scale": 0.5},
        {"type": "concatenate", "name": "j", "inputs": ["wt", "emb"]},
        {"type": "dense", "name": "o", "units": 1},
        {"type": "embedding_bag", "name": "lin", "input": "s", "vocab": 8, "dim": 1,
         "combiner": "sum", "use_bias": true, "init_scale": 0.5},
        {"type": "add", "name": "y", "inputs": ["o", "lin"]}],
      "loss": "sigmoid_cross_entropy"}})";
  SeededRandom rng(31);
  const std::size_t n = 7;
  std::vector<InputColumns> inputs;
  inputs.push_back(random_sparse_input("s", rng, n, 8, 2, true));
  inputs.push_back(random_sparse_input("t", rng, n, 6, 3, false));
  bool empty_row = false;
  for (std::size_t i = 0; i < n; ++i) {
    empty_row |= inputs[0].offsets[i] == inputs[0].offsets[i + 1];
  }
  CHECK(empty_row);
  std::vector<std::int32_t> labels(n);
  for (auto& l : labels) l = static_cast<std::int32_t>(rng.below(2));
  check_model_gradients(plan, Dataset::from_inputs(std::move(inputs), labels), 19);
}

TEST_CASE("multiply_backward_matches_finite_differences", "[graph_gradient]") {
  SeededRandom rng(41);
  const std::size_t n = 6;
  std::vector<float> p = random_values(rng, n), q = random_values(rng, n);
  const std::vector<float> w = random_values(rng, n);
  p[2] = 0.0f;  // a zero factor: the others' gradient is exact (no division by it)
  std::vector<float> y(n);
  const auto f = [&] {
    multiply_forward({p.data(), q.data(), p.data()}, n, y.data());
    return weighted_sum(y, w);
  };
  // p is read twice: its gradient is the sum of both reads' (gy · q · p each).
  const std::vector<const float*> xs{p.data(), q.data(), p.data()};
  std::vector<float> gp(n), again(n), gq(n);
  multiply_backward(xs, 0, w.data(), n, gp.data());
  multiply_backward(xs, 2, w.data(), n, again.data());
  for (std::size_t i = 0; i < n; ++i) gp[i] += again[i];
  multiply_backward(xs, 1, w.data(), n, gq.data());
  CHECK(gq[2] == 0.0f);
  check_against_differences(p, gp, f);
  check_against_differences(q, gq, f);
}

TEST_CASE("multiply_graph_gradients_match_finite_differences", "[graph_gradient]") {
  // A gate (sigmoid) times a mean embedding times a dense input, the embedding read twice: the
  // gradient reaches every parameter through the product of the others.
  const char* plan = R"({"kind": "evaluate", "model": {
      "inputs": {"a": "sparse_ids", "x": {"type": "dense", "dim": 3}},
      "layers": [
        {"type": "embedding_bag", "name": "e", "input": "a", "vocab": 8, "dim": 3,
         "combiner": "mean", "init_scale": 0.8},
        {"type": "dense", "name": "g", "input": "x", "units": 3, "activation": "sigmoid"},
        {"type": "multiply", "name": "m", "inputs": ["g", "e", "x", "e"]},
        {"type": "dense", "name": "o", "units": 2}],
      "loss": "softmax_cross_entropy"}})";
  SeededRandom rng(43);
  const std::size_t n = 6;
  std::vector<InputColumns> inputs;
  inputs.push_back(random_sparse_input("a", rng, n, 8, 3, true));
  inputs.push_back(random_dense_input("x", rng, n, 3));
  std::vector<std::int32_t> labels(n);
  for (auto& l : labels) l = static_cast<std::int32_t>(rng.below(2));
  check_model_gradients(plan, Dataset::from_inputs(std::move(inputs), labels), 23);
}
