#include "core/model/loss.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace fedleaf::core {
namespace {

[[noreturn]] void bad_label(std::size_t b, std::int32_t label, const std::string& rule) {
  throw InvalidInput("dataset: label " + std::to_string(label) + " of batch example " +
                     std::to_string(b) + " " + rule);
}

}  // namespace

LossSums compute_loss(LossType type, const float* logits, const std::int32_t* labels,
                      std::size_t batch, std::size_t width, float grad_scale, float* grad) {
  LossSums sums;
  if (type == LossType::kSigmoidCrossEntropy) {
    for (std::size_t b = 0; b < batch; ++b) {
      const std::int32_t label = labels[b];
      if (label != 0 && label != 1) bad_label(b, label, "is not 0 or 1 (sigmoid_cross_entropy)");
      const float z = logits[b];
      const float y = static_cast<float>(label);
      // e = exp(-|z|) serves both the loss max(z, 0) - z y + log(1 + e) and the probability
      // (1 / (1 + e) for z >= 0, e / (1 + e) below), without overflow.
      const float e = std::exp(-std::fabs(z));
      sums.loss += static_cast<double>(std::fmax(z, 0.0f) - z * y + std::log1p(e));
      if ((z > 0.0f) == (label == 1)) ++sums.correct;
      if (grad != nullptr) {
        const float p = z >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
        grad[b] = grad_scale * (p - y);
      }
    }
    return sums;
  }
  for (std::size_t b = 0; b < batch; ++b) {
    const std::int32_t label = labels[b];
    if (label < 0 || static_cast<std::size_t>(label) >= width) {
      bad_label(b, label,
                "is not a class id below " + std::to_string(width) + " (softmax_cross_entropy)");
    }
    const float* z = logits + b * width;
    std::size_t argmax = 0;
    for (std::size_t k = 1; k < width; ++k) {
      if (z[k] > z[argmax]) argmax = k;
    }
    const float m = z[argmax];
    // exp(z - m) is computed once: kept in the gradient row when there is one.
    float* g = grad != nullptr ? grad + b * width : nullptr;
    float denom = 0.0f;
    for (std::size_t k = 0; k < width; ++k) {
      const float e = std::exp(z[k] - m);
      if (g != nullptr) g[k] = e;
      denom += e;
    }
    sums.loss += static_cast<double>(std::log(denom) - (z[label] - m));
    if (argmax == static_cast<std::size_t>(label)) ++sums.correct;
    if (g != nullptr) {
      const float inverse = 1.0f / denom;
      for (std::size_t k = 0; k < width; ++k) {
        g[k] = grad_scale * (g[k] * inverse - (k == static_cast<std::size_t>(label) ? 1.0f : 0.0f));
      }
    }
  }
  return sums;
}

LossSums mean_squared_error(const float* outputs, const float* targets, std::size_t batch,
                            std::size_t width, float grad_scale, float* grad) {
  LossSums sums;
  const float inverse_width = 1.0f / static_cast<float>(width);
  for (std::size_t b = 0; b < batch; ++b) {
    float sum = 0.0f;
    for (std::size_t u = 0; u < width; ++u) {
      const float d = outputs[b * width + u] - targets[b * width + u];
      sum += d * d;
      if (grad != nullptr) grad[b * width + u] = grad_scale * 2.0f * d * inverse_width;
    }
    sums.loss += static_cast<double>(sum * inverse_width);
  }
  return sums;
}

float binary_score(LossType type, const float* logits_row) {
  return type == LossType::kSigmoidCrossEntropy ? logits_row[0] : logits_row[1] - logits_row[0];
}

}  // namespace fedleaf::core
