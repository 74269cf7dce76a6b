// One layer of a built Model: the op its LayerKind made (layer_op.h), its gradients' indices and
// its output buffers. The graph walk calls layer.op once per layer per batch.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "core/model/layer_op.h"
#include "core/model/model_spec.h"

namespace fedleaf::core {

struct ModelLayer {
  std::size_t width = 0;
  std::vector<NodeRef> sources;  // LayerSpec::sources
  std::size_t feed = 0;          // a layer reading ids: the batch feed of its ids
  std::unique_ptr<LayerOp> op;
  int weight_gradient = -1;
  int bias_gradient = -1;
  std::vector<float> output;       // [max_batch, width]
  std::vector<float> grad_output;  // [max_batch, width]
};

}  // namespace fedleaf::core
