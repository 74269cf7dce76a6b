// Class probabilities of a model on local data: what a page shows when it classifies a text
// with the latest global model.
//
//   Predictions p = predict(plan_json, model.data(), model.size(), dataset);
//   float spam = p.probabilities[i * p.num_classes + 1];   // example i, class 1
//
// The plan's model section defines the model: "kind", "train" and "updates" may be absent (an
// inference-only plan), and are checked but not used when given. The model bytes must hold every
// declared parameter as a dense F32 tensor of the declared shape. The dataset must fit the model as
// for evaluation (input kind, ids below the vocab, labels valid for the loss); labels do not change
// the result. Softmax losses give softmax(logits) over the output width; the sigmoid loss gives two
// classes, [1 - sigmoid(z), sigmoid(z)]; mean_squared_error gives the model's outputs themselves
// (num_classes = output width; "probabilities" then holds the predicted values). Pure and
// deterministic; errors are InvalidInput naming the plan path, tensor or example.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/dataset.h"
#include "core/train/plan.h"

namespace fedleaf::core {

struct Predictions {
  std::size_t num_classes = 0;
  std::vector<float> probabilities;  // [dataset.size(), num_classes] row-major, rows sum to 1
};

Predictions predict(const Plan& plan, const std::uint8_t* model, std::size_t model_size,
                    const Dataset& dataset);
// The same from the plan's JSON, parsed here (PlanUse::kInference).
Predictions predict(const std::string& plan_json, const std::uint8_t* model, std::size_t model_size,
                    const Dataset& dataset);

}  // namespace fedleaf::core
