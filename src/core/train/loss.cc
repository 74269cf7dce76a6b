#include "core/train/loss.h"

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
      // max(z, 0) - z y + log(1 + exp(-|z|))
      sums.loss +=
          static_cast<double>(std::fmax(z, 0.0f) - z * y + std::log1p(std::exp(-std::fabs(z))));
      if ((z > 0.0f) == (label == 1)) ++sums.correct;
      if (grad != nullptr) {
        const float p =
            z >= 0.0f ? 1.0f / (1.0f + std::exp(-z)) : std::exp(z) / (1.0f + std::exp(z));
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
    float denom = 0.0f;
    for (std::size_t k = 0; k < width; ++k) denom += std::exp(z[k] - m);
    const float log_denom = std::log(denom);
    sums.loss += static_cast<double>(log_denom - (z[label] - m));
    if (argmax == static_cast<std::size_t>(label)) ++sums.correct;
    if (grad != nullptr) {
      float* g = grad + b * width;
      for (std::size_t k = 0; k < width; ++k) {
        const float p = std::exp(z[k] - m - log_denom);
        g[k] = grad_scale * (p - (k == static_cast<std::size_t>(label) ? 1.0f : 0.0f));
      }
    }
  }
  return sums;
}

float binary_score(LossType type, const float* logits_row) {
  return type == LossType::kSigmoidCrossEntropy ? logits_row[0] : logits_row[1] - logits_row[0];
}

}  // namespace fedleaf::core
