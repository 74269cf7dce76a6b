// One layer of a built Model: the forward/backward object its LayerKind made, its gradients'
// indices and its buffers. Model dispatches on which object is set, once per layer per batch.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "core/train/dense_layer.h"
#include "core/train/embedding_bag.h"
#include "core/train/plan.h"

namespace fedleaf::core {

struct ModelLayer {
  LayerType type = LayerType::kDense;
  std::size_t width = 0;
  std::optional<EmbeddingBag> embedding;
  std::optional<DenseLayer> dense;
  int weight_gradient = -1;
  int bias_gradient = -1;
  std::vector<float> output;       // [max_batch, width]
  std::vector<float> grad_output;  // [max_batch, width]
};

}  // namespace fedleaf::core
