// SGD, momentum and Adam over the gradients a Model produces, with lazy updates for row-sparse
// gradients: a step changes only the rows (and optimizer state rows) the batch touched.
//
//   Optimizer opt(plan.train->optimizer, model.gradients(), plan.train->clip_norm);
//   model.forward_backward(batch);
//   opt.apply(model.gradients());
//
// Updates, with g the (clipped) gradient, t the number of apply() calls so far including this
// one, for every element of a dense gradient and of each touched row of a row-sparse one:
//   sgd:      p -= lr g
//   momentum: v = μ v + g;  p -= lr v
//   adam:     m = β1 m + (1-β1) g;  v = β2 v + (1-β2) g²;  then by the spec's epsilon_form:
//     keras (default): p -= lr · sqrt(1-β2^t)/(1-β1^t) · m / (sqrt(v) + ε)
//                      ε is Kingma & Ba's ε̂, inside the bias correction: Keras (Python) and
//                      TensorFlow's Adam
//     tfjs:            p -= lr · m̂ / (sqrt(v̂) + ε),  m̂ = m/(1-β1^t), v̂ = v/(1-β2^t)
//                      ε outside it: TF.js's AdamOptimizer and Kingma & Ba's Algorithm 1. The
//                      forms differ where sqrt(v̂) is not much larger than ε (small gradients).
// Untouched rows keep their values and state (TensorFlow's LazyAdam / sparse momentum). With
// clip_norm > 0 every gradient of a step is scaled by min(1, clip_norm / global L2 norm).
// State has the size of the parameters given (the executor gives it compact tables, so state
// follows the rows a client touches, not the vocabulary).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/parameter_gradient.h"
#include "core/train/plan.h"

namespace fedleaf::core {

class Optimizer {
 public:
  // `layout` fixes the parameters (their order, rows and row sizes) of every later apply().
  Optimizer(const OptimizerSpec& spec, const std::vector<ParameterGradient>& layout,
            float clip_norm = 0.0f);

  // Throws InvalidInput when `gradients` does not match the layout.
  void apply(const std::vector<ParameterGradient>& gradients);
  std::uint64_t steps() const { return steps_; }

 private:
  // Per parameter: momentum's velocity, one value per parameter value; Adam's m and v side by
  // side per row (row r: its m, then its v), so a touched row's state is one block in memory.
  using State = std::vector<float>;

  OptimizerSpec spec_;
  float clip_norm_;
  std::uint64_t steps_ = 0;
  std::vector<std::size_t> rows_;
  std::vector<std::size_t> row_sizes_;
  std::vector<State> state_;
};

// The plan's train.optimizer object at `path` ("plan.train.optimizer"); its schema is plan.h's.
// InvalidInput "<path>.<field>: <rule>" for a broken or unknown field.
OptimizerSpec parse_optimizer_spec(const nlohmann::json& object, const std::string& path);

// L2 norm over every value of every gradient (row-sparse: the rows present).
double global_norm(const std::vector<ParameterGradient>& gradients);

}  // namespace fedleaf::core
