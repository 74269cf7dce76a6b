#include "core/train/optimizer.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace fedleaf::core {

Optimizer::Optimizer(const OptimizerSpec& spec, const std::vector<ParameterGradient>& layout,
                     float clip_norm)
    : spec_(spec), clip_norm_(clip_norm) {
  for (const ParameterGradient& g : layout) {
    rows_.push_back(g.rows);
    row_sizes_.push_back(g.row_size);
    State s;
    const std::size_t n = g.rows * g.row_size;
    if (spec_.type != OptimizerType::kSgd) s.first.assign(n, 0.0f);
    if (spec_.type == OptimizerType::kAdam) s.second.assign(n, 0.0f);
    state_.push_back(std::move(s));
  }
}

void Optimizer::update_row(std::size_t param, std::size_t row, const float* g, float* p,
                           float scale, float adam_step) {
  const std::size_t n = row_sizes_[param];
  const float lr = spec_.learning_rate;
  switch (spec_.type) {
    case OptimizerType::kSgd: {
      const float a = lr * scale;
      for (std::size_t k = 0; k < n; ++k) p[k] -= a * g[k];
      return;
    }
    case OptimizerType::kMomentum: {
      float* v = state_[param].first.data() + row * n;
      const float mu = spec_.momentum;
      for (std::size_t k = 0; k < n; ++k) {
        v[k] = mu * v[k] + scale * g[k];
        p[k] -= lr * v[k];
      }
      return;
    }
    case OptimizerType::kAdam: {
      float* m = state_[param].first.data() + row * n;
      float* v = state_[param].second.data() + row * n;
      const float b1 = spec_.beta1;
      const float b2 = spec_.beta2;
      const float eps = spec_.epsilon;
      for (std::size_t k = 0; k < n; ++k) {
        const float gk = scale * g[k];
        m[k] = b1 * m[k] + (1.0f - b1) * gk;
        v[k] = b2 * v[k] + (1.0f - b2) * gk * gk;
        p[k] -= adam_step * m[k] / (std::sqrt(v[k]) + eps);
      }
      return;
    }
  }
}

void Optimizer::apply(const std::vector<ParameterGradient>& gradients) {
  if (gradients.size() != state_.size()) {
    throw InvalidInput("optimizer: got " + std::to_string(gradients.size()) +
                       " gradients for a layout of " + std::to_string(state_.size()));
  }
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    const ParameterGradient& g = gradients[i];
    const std::size_t expected =
        g.row_sparse ? g.touched_rows.size() * g.row_size : g.rows * g.row_size;
    if (g.rows != rows_[i] || g.row_size != row_sizes_[i] || g.values.size() != expected) {
      throw InvalidInput("optimizer: gradient '" + g.name + "' does not match the layout");
    }
    for (std::uint32_t r : g.touched_rows) {
      if (r >= g.rows) {
        throw InvalidInput("optimizer: gradient '" + g.name + "' touches row " + std::to_string(r) +
                           " of " + std::to_string(g.rows));
      }
    }
  }
  ++steps_;
  float scale = 1.0f;
  if (clip_norm_ > 0.0f) {
    const double norm = global_norm(gradients);
    if (norm > clip_norm_) scale = static_cast<float>(clip_norm_ / norm);
  }
  float adam_step = 0.0f;
  if (spec_.type == OptimizerType::kAdam) {
    const double t = static_cast<double>(steps_);
    adam_step = static_cast<float>(spec_.learning_rate * std::sqrt(1.0 - std::pow(spec_.beta2, t)) /
                                   (1.0 - std::pow(spec_.beta1, t)));
  }
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    const ParameterGradient& g = gradients[i];
    const std::size_t n = g.row_size;
    if (g.row_sparse) {
      for (std::size_t k = 0; k < g.touched_rows.size(); ++k) {
        const std::size_t row = g.touched_rows[k];
        update_row(i, row, g.values.data() + k * n, g.parameter + row * n, scale, adam_step);
      }
    } else {
      for (std::size_t row = 0; row < g.rows; ++row) {
        update_row(i, row, g.values.data() + row * n, g.parameter + row * n, scale, adam_step);
      }
    }
  }
}

double global_norm(const std::vector<ParameterGradient>& gradients) {
  double sum = 0.0;
  for (const ParameterGradient& g : gradients) {
    for (float v : g.values) sum += static_cast<double>(v) * v;
  }
  return std::sqrt(sum);
}

}  // namespace fedleaf::core
