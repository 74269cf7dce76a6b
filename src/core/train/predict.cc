#include "core/train/predict.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/train/forward_over_dataset.h"
#include "core/train/plan.h"
#include "core/wire/safetensors.h"

namespace fedleaf::core {
namespace {

// Writes softmax(logits[0..width)) into out, stably (max subtracted first).
void softmax_row(const float* logits, std::size_t width, float* out) {
  const float max = *std::max_element(logits, logits + width);
  double sum = 0.0;
  for (std::size_t c = 0; c < width; ++c) sum += std::exp(static_cast<double>(logits[c] - max));
  for (std::size_t c = 0; c < width; ++c) {
    out[c] = static_cast<float>(std::exp(static_cast<double>(logits[c] - max)) / sum);
  }
}

}  // namespace

Predictions predict(const std::string& plan_json, const std::uint8_t* model_bytes,
                    std::size_t model_size, const Dataset& dataset) {
  return predict(parse_plan(plan_json, PlanUse::kInference), model_bytes, model_size, dataset);
}

Predictions predict(const Plan& plan, const std::uint8_t* model_bytes, std::size_t model_size,
                    const Dataset& dataset) {
  const bool sigmoid = plan.model.loss == LossType::kSigmoidCrossEntropy;
  Predictions out;
  out.num_classes = sigmoid ? 2 : plan.model.output_width;
  out.probabilities.resize(dataset.size() * out.num_classes);
  forward_over_dataset(
      plan, model_bytes, model_size, dataset,
      [&](const Model& model, std::size_t first, std::size_t count, const LossSums&) {
        const std::size_t width = model.output_width();
        for (std::size_t b = 0; b < count; ++b) {
          const float* logits = model.outputs() + b * width;
          float* row = out.probabilities.data() + (first + b) * out.num_classes;
          if (plan.model.loss == LossType::kMeanSquaredError) {
            std::copy(logits, logits + width, row);
          } else if (sigmoid) {
            const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(logits[0])));
            row[0] = static_cast<float>(1.0 - p);
            row[1] = static_cast<float>(p);
          } else {
            softmax_row(logits, width, row);
          }
        }
      });
  return out;
}

}  // namespace fedleaf::core
