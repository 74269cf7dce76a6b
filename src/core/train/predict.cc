#include "core/train/predict.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/safetensors.h"
#include "core/train/batch.h"
#include "core/train/model.h"
#include "core/train/model_parameters.h"
#include "core/train/plan.h"

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
  const Plan plan = parse_plan(plan_json);
  check_dataset_fits(plan.model, dataset);
  Parameters params = declared_parameters(
      plan.model, read_safetensors(model_bytes, model_size, {/*require_finite=*/true}).tensors);
  const std::size_t batch_size = std::min(plan.eval_batch_size, dataset.size());
  Model model(plan.model, params, batch_size);
  BatchGatherer gatherer(dataset);
  const bool sigmoid = plan.model.loss == LossType::kSigmoidCrossEntropy;
  const std::size_t width = model.output_width();

  Predictions out;
  out.num_classes = sigmoid ? 2 : width;
  out.probabilities.resize(dataset.size() * out.num_classes);
  std::vector<std::uint32_t> examples(batch_size);
  for (std::size_t begin = 0; begin < dataset.size(); begin += batch_size) {
    const std::size_t count = std::min(batch_size, dataset.size() - begin);
    for (std::size_t b = 0; b < count; ++b) examples[b] = static_cast<std::uint32_t>(begin + b);
    model.forward(gatherer.gather(examples.data(), count));
    for (std::size_t b = 0; b < count; ++b) {
      const float* logits = model.outputs() + b * width;
      float* row = out.probabilities.data() + (begin + b) * out.num_classes;
      if (sigmoid) {
        const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(logits[0])));
        row[0] = static_cast<float>(1.0 - p);
        row[1] = static_cast<float>(p);
      } else {
        softmax_row(logits, width, row);
      }
    }
  }
  return out;
}

}  // namespace fedleaf::core
