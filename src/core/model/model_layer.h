// One layer of a built Model: the forward/backward object its LayerKind made, its gradients'
// indices and its buffers. Model dispatches on which object is set, once per layer per batch.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "core/model/dense_layer.h"
#include "core/model/embedding_bag.h"
#include "core/model/model_spec.h"

namespace fedleaf::core {

struct ModelLayer {
  LayerType type = LayerType::kDense;
  std::size_t width = 0;
  std::vector<NodeRef> sources;  // LayerSpec::sources
  std::size_t feed = 0;          // embedding_bag: the batch feed of its ids
  std::optional<EmbeddingBag> embedding;
  std::optional<DenseLayer> dense;
  int weight_gradient = -1;
  int bias_gradient = -1;
  std::vector<float> output;       // [max_batch, width]
  std::vector<float> grad_output;  // [max_batch, width]
  std::vector<float> mask;         // dropout: [max_batch, width], the last training step's
  // A second lookup of a shared table: its own gradient, summed into the table's.
  ParameterGradient lookup_gradient;
};

}  // namespace fedleaf::core
