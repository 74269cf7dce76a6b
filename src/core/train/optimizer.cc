#include "core/train/optimizer.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/kernels/dense_kernels.h"

namespace fedleaf::core {

OptimizerSpec parse_optimizer_spec(const nlohmann::json& object, const std::string& path) {
  using namespace plan_json;
  check_known_fields(object, path, kOptimizerFields);
  OptimizerSpec spec;
  spec.type = get_choice(object, path, "type", nullptr, "optimizer", kOptimizerTypes);
  const auto positive = [](double d) { return d > 0; };
  const auto unit = [](double d) { return d >= 0 && d < 1; };
  spec.learning_rate = get_float(object, path, "learning_rate", std::nullopt, "> 0", positive);
  spec.momentum = get_float(object, path, "momentum", 0.9f, "in [0, 1)", unit);
  spec.beta1 = get_float(object, path, "beta1", 0.9f, "in [0, 1)", unit);
  spec.beta2 = get_float(object, path, "beta2", 0.999f, "in [0, 1)", unit);
  spec.epsilon = get_float(object, path, "epsilon", 1e-7f, "> 0", positive);
  spec.epsilon_form =
      get_choice(object, path, "epsilon_form", "keras", "epsilon form", kAdamEpsilonForms);
  return spec;
}

Optimizer::Optimizer(const OptimizerSpec& spec, const std::vector<ParameterGradient>& layout,
                     float clip_norm)
    : spec_(spec), clip_norm_(clip_norm) {
  for (const ParameterGradient& g : layout) {
    rows_.push_back(g.rows);
    row_sizes_.push_back(g.row_size);
    const std::size_t n = g.rows * g.row_size;
    const std::size_t per_value = spec_.type == OptimizerType::kAdam       ? 2
                                  : spec_.type == OptimizerType::kMomentum ? 1
                                                                           : 0;
    state_.emplace_back(per_value * n, 0.0f);
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
  float adam_epsilon = spec_.epsilon;
  if (spec_.type == OptimizerType::kAdam) {
    const double t = static_cast<double>(steps_);
    const double root_c2 = std::sqrt(1.0 - std::pow(spec_.beta2, t));
    adam_step =
        static_cast<float>(spec_.learning_rate * root_c2 / (1.0 - std::pow(spec_.beta1, t)));
    // lr · m̂ / (sqrt(v̂) + ε) is lr · root_c2 / c1 · m / (sqrt(v) + ε · root_c2): the kernel's
    // step with ε scaled, so both forms share one kernel.
    if (spec_.epsilon_form == AdamEpsilonForm::kTfjs) {
      adam_epsilon = static_cast<float>(spec_.epsilon * root_c2);
    }
  }
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    const ParameterGradient& g = gradients[i];
    // A dense gradient is one contiguous block: the kernels see it as a single row.
    const std::uint32_t* rows = g.row_sparse ? g.touched_rows.data() : nullptr;
    const std::size_t count = g.row_sparse ? g.touched_rows.size() : 1;
    const std::size_t row_size = g.row_sparse ? g.row_size : g.rows * g.row_size;
    switch (spec_.type) {
      case OptimizerType::kSgd:
        kernels::sgd_update_rows(rows, count, row_size, g.values.data(), g.parameter,
                                 spec_.learning_rate * scale);
        break;
      case OptimizerType::kMomentum:
        kernels::momentum_update_rows(
            rows, count, row_size, g.values.data(), state_[i].data(), g.parameter,
            kernels::MomentumStep{spec_.learning_rate, spec_.momentum, scale});
        break;
      case OptimizerType::kAdam:
        kernels::adam_update_rows(
            rows, count, row_size, g.values.data(), state_[i].data(), state_[i].data() + row_size,
            2 * row_size, g.parameter,
            kernels::AdamStep{spec_.beta1, spec_.beta2, adam_epsilon, adam_step, scale});
        break;
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
