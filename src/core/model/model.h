// A model built from a plan's model section (a graph of layers over named inputs), over
// parameter tensors it borrows: forward, loss and backward for one batch at a time, with
// row-sparse gradients for embedding tables.
//
//   Parameters params = ...;                          // "<layer>/weight", "<layer>/bias", F32
//   Model model(plan.model, params, /*max_batch_size=*/32);
//   LossSums s = model.forward_backward(batch);       // s.loss summed over the batch
//   optimizer.apply(model.gradients());               // mean-over-batch gradients
//
// All workspace is allocated in the constructor for max_batch_size examples; a batch allocates
// only when its ids outnumber every earlier batch's. This is the graph walk: it calls each
// layer's op (layer_op.h, made by its LayerKind) once per layer per batch, never per example, and
// names no layer type. Layers run in the plan's (topological) order; backward runs them in
// reverse, and the gradient of a layer read by several layers is the sum of what each sends
// back (in reverse layer order); the lookups of a shared table sum into its one row-sparse
// gradient.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/data/batch.h"
#include "core/model/dataset_fit.h"
#include "core/model/layer_pass.h"
#include "core/model/loss.h"
#include "core/model/model_layer.h"
#include "core/model/model_spec.h"
#include "core/model/parameter_gradient.h"
#include "core/tensor/dense_tensor.h"

namespace fedleaf::core {

using Parameters = std::map<std::string, DenseTensor>;

class Model {
 public:
  // `parameters` must hold every tensor parameter_specs(spec) declares as F32 with the declared
  // shape, except that an embedding table may have any number of rows (the executor trains on a
  // compact table of the rows its data touches). Throws InvalidInput naming the tensor and the
  // plan path otherwise. The tensors are borrowed: they must outlive the model and keep their
  // shapes; their values may change between batches (that is what the optimizer does).
  Model(const ModelSpec& spec, Parameters& parameters, std::size_t max_batch_size);

  // Throws InvalidInput when the batch does not match the model's inputs (feeds, kind, width,
  // size above max_batch_size, ids outside a table) or a label is out of range for the loss.
  // Inference: dropout is the identity.
  LossSums forward(const Batch& batch);
  // A training step: forward (dropout masks drawn for step number steps_trained()), then the
  // gradients of the batch's mean loss into gradients().
  LossSums forward_backward(const Batch& batch);
  // The loss forward_backward would compute for `batch` now (dropout's masks of step
  // steps_trained()), with no gradients and no step counted: the function whose finite
  // differences check a training step's gradients.
  LossSums forward_training(const Batch& batch);
  // forward_backward calls so far: the step number of dropout's masks.
  std::uint64_t steps_trained() const { return step_; }

  // From now on forward_backward() itself applies SGD with `learning_rate` to every embedding
  // table, fused with the table's backward pass (EmbeddingBag::backward_sgd), and leaves the
  // table's gradient empty (no touched rows); dense parameters keep their gradients for the
  // optimizer. Only for plain SGD without clip_norm: momentum and Adam need a row's summed
  // gradient, clipping needs the global norm first.
  void fuse_sparse_sgd(float learning_rate) { fused_sgd_learning_rate_ = learning_rate; }

  // Logits of the last forward: [batch size, output_width()].
  const float* outputs() const { return layers_.back().output.data(); }
  std::size_t output_width() const { return spec_.output_width; }
  const ModelSpec& spec() const { return spec_; }
  // One entry per parameter, in parameter_specs() order.
  std::vector<ParameterGradient>& gradients() { return gradients_; }
  const std::vector<ParameterGradient>& gradients() const { return gradients_; }

 private:
  void check_batch(const Batch& batch) const;
  // Runs every layer; returns the logits.
  const float* run_layers(const Batch& batch, bool training);
  LossSums loss(const Batch& batch, const float* logits, float grad_scale, float* grad) const;

  ModelSpec spec_;
  std::size_t max_batch_size_;
  std::vector<ModelLayer> layers_;
  std::vector<ParameterGradient> gradients_;
  std::optional<float> fused_sgd_learning_rate_;
  std::uint64_t step_ = 0;
  PassBuffers buffers_;
};

}  // namespace fedleaf::core
