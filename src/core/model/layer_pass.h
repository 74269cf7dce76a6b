// One pass of the graph walk over a batch, as a layer's op sees it (layer_op.h): the batch and
// its feeds, the rows each source holds, where to send a source its gradient, and the
// parameters' gradients. Model makes one per forward or backward call over its own state, so an
// op needs nothing of Model and Model nothing of any op.
//
//   const float* x = pass.rows(layer.sources.front());
//   if (float* gx = pass.gradient_target(source)) { ...; pass.gradient_sent(source, n * width); }
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/data/batch.h"
#include "core/model/model_layer.h"
#include "core/model/model_spec.h"
#include "core/model/parameter_gradient.h"

namespace fedleaf::core {

// What the walk keeps between passes, allocated once by Model.
struct PassBuffers {
  std::vector<bool> sent;            // per layer: a gradient was sent to it this backward pass
  std::vector<bool> table_written;   // per gradient: a lookup wrote it this backward pass
  std::vector<float> scratch;        // [max_batch, widest layer]: a second reader's gradient
  std::vector<float> merged_values;  // shared tables: the merge's buffers
  std::vector<std::uint32_t> merged_rows;
};

class LayerPass {
 public:
  LayerPass(const ModelSpec& spec, std::vector<ModelLayer>& layers,
            std::vector<ParameterGradient>& gradients, PassBuffers& buffers, const Batch& batch,
            bool training, std::uint64_t step, std::optional<float> fused_sgd_learning_rate)
      : spec_(spec),
        layers_(layers),
        gradients_(gradients),
        buffers_(buffers),
        batch_(batch),
        training_(training),
        step_(step),
        fused_sgd_learning_rate_(fused_sgd_learning_rate) {}

  std::size_t size() const { return batch_.size; }  // examples in the batch
  // A training pass (dropout draws its mask for step()); else inference.
  bool training() const { return training_; }
  std::uint64_t step() const { return step_; }
  // Model::fuse_sparse_sgd's learning rate, when set.
  std::optional<float> fused_sgd_learning_rate() const { return fused_sgd_learning_rate_; }

  const Batch& feed(std::size_t f) const {
    return batch_.num_feeds == 0 ? batch_ : batch_.feeds[f];
  }
  // The rows `source` holds: a dense input's rows or an earlier layer's output.
  const float* rows(const NodeRef& source) const;
  std::size_t width(const NodeRef& source) const;

  // Where a layer's backward writes the gradient it sends to `source`: the source's grad_output
  // when nothing was sent to it yet this pass, else the scratch, which gradient_sent() then adds
  // in (count values); nullptr for a model input (no gradient).
  float* gradient_target(const NodeRef& source);
  void gradient_sent(const NodeRef& source, std::size_t count);

  ParameterGradient& gradient(int index) { return gradients_[static_cast<std::size_t>(index)]; }
  // True the first time a lookup writes gradient `index` this pass (and marks it written): the
  // first lookup of a table writes its gradient, later ones merge into it.
  bool first_write(int index);
  // gradient(index) += add, both row-sparse with sorted unique rows (each lookup's BatchRows
  // order): the union of their rows, in increasing order, a row in both summed.
  void merge_row_sparse(int index, const ParameterGradient& add);

 private:
  const ModelSpec& spec_;
  std::vector<ModelLayer>& layers_;
  std::vector<ParameterGradient>& gradients_;
  PassBuffers& buffers_;
  const Batch& batch_;
  bool training_;
  std::uint64_t step_;
  std::optional<float> fused_sgd_learning_rate_;
};

}  // namespace fedleaf::core
