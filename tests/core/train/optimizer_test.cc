#include <catch2/catch.hpp>

#include <cmath>

#include "core/train/optimizer.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

ParameterGradient dense_gradient(std::vector<float>& param, std::size_t rows, std::size_t cols) {
  ParameterGradient g;
  g.name = "w";
  g.parameter = param.data();
  g.rows = rows;
  g.row_size = cols;
  g.values.assign(rows * cols, 0.0f);
  return g;
}

ParameterGradient row_gradient(std::vector<float>& param, std::size_t rows, std::size_t cols,
                               std::vector<std::uint32_t> touched, std::vector<float> values) {
  ParameterGradient g;
  g.name = "emb";
  g.parameter = param.data();
  g.rows = rows;
  g.row_size = cols;
  g.row_sparse = true;
  g.touched_rows = std::move(touched);
  g.values = std::move(values);
  return g;
}

OptimizerSpec spec_of(OptimizerType type, float lr) {
  OptimizerSpec s;
  s.type = type;
  s.learning_rate = lr;
  return s;
}

}  // namespace

TEST_CASE("sgd_momentum_and_adam_follow_their_update_rules", "[optimizer]") {
  const std::vector<float> g1{0.5f, -1.0f};
  const std::vector<float> g2{0.25f, 2.0f};
  for (OptimizerType type : {OptimizerType::kSgd, OptimizerType::kMomentum, OptimizerType::kAdam}) {
    INFO(static_cast<int>(type));
    std::vector<float> p{1.0f, 2.0f};
    std::vector<ParameterGradient> grads{dense_gradient(p, 1, 2)};
    const OptimizerSpec s = spec_of(type, 0.1f);
    Optimizer opt(s, grads);
    double ref[2] = {1.0, 2.0}, m[2] = {0, 0}, v[2] = {0, 0};
    for (int t = 1; t <= 2; ++t) {
      const std::vector<float>& g = t == 1 ? g1 : g2;
      grads[0].values = g;
      opt.apply(grads);
      for (int k = 0; k < 2; ++k) {
        if (type == OptimizerType::kSgd) ref[k] -= 0.1 * g[k];
        if (type == OptimizerType::kMomentum) {
          m[k] = 0.9 * m[k] + g[k];
          ref[k] -= 0.1 * m[k];
        }
        if (type == OptimizerType::kAdam) {
          m[k] = 0.9 * m[k] + 0.1 * g[k];
          v[k] = 0.999 * v[k] + 0.001 * g[k] * g[k];
          const double step = 0.1 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
          ref[k] -= step * m[k] / (std::sqrt(v[k]) + 1e-7);
        }
      }
    }
    CHECK(opt.steps() == 2);
    CHECK(p[0] == Approx(ref[0]).epsilon(1e-5));
    CHECK(p[1] == Approx(ref[1]).epsilon(1e-5));
  }
}

// The two places of Adam's ε, each against its rule written out in f64: keras puts ε inside the
// bias correction (ε̂), tfjs outside (TF.js's AdamOptimizer: m̂ / (sqrt(v̂) + ε)). Gradients of
// 1e-6 make sqrt(v̂) the size of ε, where the forms part: the check that each is its own rule.
TEST_CASE("adam_steps_in_its_epsilon_form", "[optimizer]") {
  const std::vector<std::vector<float>> gradients{{1e-6f, -2e-6f}, {3e-6f, 5e-7f}, {-1e-6f, 4e-6f}};
  std::vector<double> by_form[2];
  for (AdamEpsilonForm form : {AdamEpsilonForm::kKeras, AdamEpsilonForm::kTfjs}) {
    INFO(static_cast<int>(form));
    std::vector<float> p{1.0f, 2.0f};
    std::vector<ParameterGradient> grads{dense_gradient(p, 1, 2)};
    OptimizerSpec s = spec_of(OptimizerType::kAdam, 0.01f);
    s.beta1 = 0.8f;
    s.beta2 = 0.95f;
    s.epsilon = 1e-6f;
    s.epsilon_form = form;
    Optimizer opt(s, grads);
    const double b1 = s.beta1, b2 = s.beta2, eps = s.epsilon, lr = s.learning_rate;
    double ref[2] = {1.0, 2.0}, m[2] = {0, 0}, v[2] = {0, 0};
    for (int t = 1; t <= 3; ++t) {
      const std::vector<float>& g = gradients[t - 1];
      grads[0].values = g;
      opt.apply(grads);
      const double c1 = 1 - std::pow(b1, t), c2 = 1 - std::pow(b2, t);
      for (int k = 0; k < 2; ++k) {
        m[k] = b1 * m[k] + (1 - b1) * g[k];
        v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k];
        ref[k] -= form == AdamEpsilonForm::kKeras
                      ? lr * std::sqrt(c2) / c1 * m[k] / (std::sqrt(v[k]) + eps)
                      : lr * (m[k] / c1) / (std::sqrt(v[k] / c2) + eps);
      }
      for (int k = 0; k < 2; ++k) {
        CHECK(p[k] == Approx(ref[k]).epsilon(1e-6));
      }
    }
    by_form[static_cast<int>(form)] = {p[0], p[1]};
  }
  // The forms differ by more than the tolerance: each check above tells them apart.
  CHECK(std::abs(by_form[0][0] - by_form[1][0]) > 1e-4);
}

TEST_CASE("row_sparse_sgd_equals_dense_sgd_with_zero_rows", "[optimizer]") {
  std::vector<float> sparse_param{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> dense_param = sparse_param;
  std::vector<ParameterGradient> sparse{
      row_gradient(sparse_param, 4, 2, {1, 3}, {0.5f, -0.5f, 1.0f, 2.0f})};
  std::vector<ParameterGradient> dense{dense_gradient(dense_param, 4, 2)};
  dense[0].values = {0, 0, 0.5f, -0.5f, 0, 0, 1.0f, 2.0f};
  Optimizer sparse_opt(spec_of(OptimizerType::kSgd, 0.5f), sparse);
  Optimizer dense_opt(spec_of(OptimizerType::kSgd, 0.5f), dense);

  sparse_opt.apply(sparse);
  dense_opt.apply(dense);

  CHECK(sparse_param == dense_param);
  CHECK(sparse_param == std::vector<float>{1, 2, 2.75f, 4.25f, 5, 6, 6.5f, 7});
}

TEST_CASE("lazy_adam_updates_only_touched_rows_with_the_global_step", "[optimizer]") {
  std::vector<float> p(3 * 1, 0.0f);
  std::vector<ParameterGradient> grads{row_gradient(p, 3, 1, {0, 1}, {1.0f, -1.0f})};
  Optimizer opt(spec_of(OptimizerType::kAdam, 0.1f), grads);
  opt.apply(grads);
  const float row0_after_first = p[0];
  const float row1_after_first = p[1];
  CHECK(p[2] == 0.0f);

  grads[0].touched_rows = {2};
  grads[0].values = {2.0f};
  opt.apply(grads);

  // Rows 0 and 1 have state but no gradient in step 2: lazy Adam leaves them alone.
  CHECK(p[0] == row0_after_first);
  CHECK(p[1] == row1_after_first);
  // Row 2's first update, with the bias correction of step t = 2.
  const double m = 0.1 * 2.0, v = 0.001 * 4.0;
  const double step = 0.1 * std::sqrt(1 - 0.999 * 0.999) / (1 - 0.9 * 0.9);
  CHECK(p[2] == Approx(-step * m / (std::sqrt(v) + 1e-7)).epsilon(1e-5));
}

TEST_CASE("lazy_momentum_keeps_untouched_velocity", "[optimizer]") {
  std::vector<float> p(2, 0.0f);
  std::vector<ParameterGradient> grads{row_gradient(p, 2, 1, {0}, {1.0f})};
  Optimizer opt(spec_of(OptimizerType::kMomentum, 1.0f), grads);
  opt.apply(grads);  // v0 = 1, p0 = -1
  grads[0].touched_rows = {1};
  opt.apply(grads);  // row 0 untouched: stays -1
  CHECK(p[0] == -1.0f);
  CHECK(p[1] == -1.0f);
  grads[0].touched_rows = {0};
  opt.apply(grads);  // v0 = 0.9 + 1, p0 = -1 - 1.9
  CHECK(p[0] == Approx(-2.9f));
}

TEST_CASE("clip_norm_scales_every_gradient_by_the_global_norm", "[optimizer]") {
  std::vector<float> a{0.0f};
  std::vector<float> b(4, 0.0f);
  std::vector<ParameterGradient> grads{dense_gradient(a, 1, 1),
                                       row_gradient(b, 2, 2, {1}, {0.0f, 4.0f})};
  grads[0].values = {3.0f};
  CHECK(global_norm(grads) == Approx(5.0));
  Optimizer opt(spec_of(OptimizerType::kSgd, 1.0f), grads, /*clip_norm=*/1.0f);

  opt.apply(grads);

  CHECK(a[0] == Approx(-0.6f));
  CHECK(b[0] == 0.0f);
  CHECK(b[1] == 0.0f);
  CHECK(b[2] == 0.0f);
  CHECK(b[3] == Approx(-0.8f));
}

TEST_CASE("optimizer_rejects_gradients_that_do_not_match_its_layout", "[optimizer]") {
  std::vector<float> p(4, 0.0f);
  std::vector<ParameterGradient> grads{row_gradient(p, 2, 2, {1}, {1.0f, 1.0f})};
  Optimizer opt(spec_of(OptimizerType::kSgd, 1.0f), grads);
  grads[0].touched_rows = {5};
  CHECK_THROWS_MATCHES(opt.apply(grads), fedleaf::InvalidInput,
                       MessageContains("gradient 'emb' touches row 5 of 2"));
  grads[0].values.push_back(1.0f);
  CHECK_THROWS_MATCHES(opt.apply(grads), fedleaf::InvalidInput,
                       MessageContains("gradient 'emb' does not match the layout"));
}
