// The losses: softmax cross entropy over class ids and sigmoid cross entropy over 0/1 labels,
// computed stably from logits, and mean squared error over float targets, with their gradients.
//
//   LossSums s = compute_loss(LossType::kSoftmaxCrossEntropy, logits, labels, batch, classes,
//                             1.0f / batch, grad);     // grad may be null (evaluation)
//   double mean_loss = s.loss / batch;
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/model/model_spec.h"

namespace fedleaf::core {

struct LossSums {
  double loss = 0.0;        // summed over the batch, in example order
  std::size_t correct = 0;  // argmax (softmax; ties → lowest class) or logit > 0 (sigmoid);
                            // 0 for mean squared error (accuracy is not defined for it)
};

// logits [batch, width]; width >= 2 for softmax (labels < width), 1 for sigmoid (labels 0/1).
// grad (when not null) [batch, width] = grad_scale · dLoss_b/dlogits_b.
// Throws InvalidInput naming the example when a label is out of range.
LossSums compute_loss(LossType type, const float* logits, const std::int32_t* labels,
                      std::size_t batch, std::size_t width, float grad_scale, float* grad);

// Mean squared error, Keras' mean over the last axis: example b's loss is
// Σ_u (y_bu - t_bu)² / width, its gradient grad_scale · 2 (y_bu - t_bu) / width. outputs and
// targets [batch, width].
LossSums mean_squared_error(const float* outputs, const float* targets, std::size_t batch,
                            std::size_t width, float grad_scale, float* grad);

// A score whose order ranks examples by their predicted probability of class 1 (binary tasks):
// the logit (sigmoid) or logit[1] - logit[0] (softmax with two classes).
float binary_score(LossType type, const float* logits_row);

}  // namespace fedleaf::core
