#include "core/model/model.h"

#include <algorithm>

#include "core/error.h"
#include "core/model/layer_kind.h"
#include "core/model/layer_pass.h"

namespace fedleaf::core {
namespace {

DenseTensor& find_parameter(Parameters& parameters, const ParameterSpec& p) {
  const auto it = parameters.find(p.name);
  if (it == parameters.end()) {
    throw InvalidInput("model: missing tensor '" + p.name + "' declared by " + p.declared_by);
  }
  DenseTensor& t = it->second;
  if (t.dtype() != DType::F32) {
    throw InvalidInput("model tensor '" + p.name + "': dtype " +
                       std::string(dtype_name(t.dtype())) + ", expected F32");
  }
  const Shape shape = t.shape();
  const bool rows_free = p.row_sparse_gradient && shape.size() == 2 && shape[1] == p.shape[1];
  if (!rows_free && shape != p.shape) {
    throw InvalidInput("model tensor '" + p.name + "': shape " + shape_to_string(shape) +
                       " differs from " + shape_to_string(p.shape) + " declared by " +
                       p.declared_by);
  }
  return t;
}

}  // namespace

Model::Model(const ModelSpec& spec, Parameters& parameters, std::size_t max_batch_size)
    : spec_(spec), max_batch_size_(max_batch_size) {
  // Hands each layer its declared tensors in parameter_specs() order, with a gradient for each.
  class Binder : public ParameterBinder {
   public:
    Binder(Parameters& parameters, std::vector<ParameterGradient>& gradients, const ModelSpec& spec)
        : parameters_(parameters), gradients_(gradients), params_(parameter_specs(spec)) {}
    Bound next() override {
      const ParameterSpec& p = params_[next_++];
      DenseTensor& t = find_parameter(parameters_, p);
      ParameterGradient g;
      g.name = p.name;
      g.parameter = t.data<float>();
      const Shape shape = t.shape();
      g.rows = shape.size() == 1 ? 1 : shape[0];
      g.row_size = shape.size() == 1 ? shape[0] : shape[1];
      g.row_sparse = p.row_sparse_gradient;
      if (!g.row_sparse) g.values.assign(g.rows * g.row_size, 0.0f);
      gradients_.push_back(std::move(g));
      bound_.emplace_back(p.name, Bound{&t, static_cast<int>(gradients_.size() - 1)});
      return bound_.back().second;
    }
    Bound bound(const std::string& name) override {
      for (const auto& [n, b] : bound_) {
        if (n == name) return b;
      }
      throw InvalidInput("model: tensor '" + name + "' is bound by no earlier layer");
    }

   private:
    Parameters& parameters_;
    std::vector<ParameterGradient>& gradients_;
    const std::vector<ParameterSpec> params_;
    std::vector<std::pair<std::string, Bound>> bound_;
    std::size_t next_ = 0;
  };
  Binder binder(parameters, gradients_, spec_);
  std::size_t widest = 0;
  for (const LayerSpec& l : spec_.layers) {
    ModelLayer layer;
    layer.width = l.output_width;
    layer.sources = l.sources;
    layer.feed = l.feed;
    layer.output.assign(max_batch_size * l.output_width, 0.0f);
    layer.grad_output.assign(max_batch_size * l.output_width, 0.0f);
    l.kind->make(l, binder, max_batch_size, layer);
    widest = std::max(widest, l.output_width);
    layers_.push_back(std::move(layer));
  }
  // A layer read by several layers receives a gradient from each: the second and later ones go
  // through the scratch (as wide as the source's output: at most `widest`), which a chain never
  // needs.
  std::vector<std::size_t> reads(layers_.size(), 0);
  bool read_twice = false;
  for (const ModelLayer& layer : layers_) {
    for (const NodeRef& s : layer.sources) {
      if (!s.is_input) read_twice |= ++reads[s.index] > 1;
    }
  }
  if (read_twice) buffers_.scratch.assign(max_batch_size * widest, 0.0f);
  buffers_.sent.assign(layers_.size(), false);
  buffers_.table_written.assign(gradients_.size(), false);
}

void Model::check_batch(const Batch& batch) const {
  if (batch.size > max_batch_size_) {
    throw InvalidInput("batch of " + std::to_string(batch.size) +
                       " examples exceeds the model's max_batch_size " +
                       std::to_string(max_batch_size_));
  }
  const std::size_t feeds = batch.num_feeds == 0 ? 1 : batch.num_feeds;
  if (feeds != spec_.feeds.size()) {
    throw InvalidInput("batch: " + std::to_string(feeds) + " feeds, the model reads " +
                       std::to_string(spec_.feeds.size()));
  }
  for (std::size_t f = 0; f < spec_.feeds.size(); ++f) {
    const InputSpec& input = spec_.inputs[spec_.feeds[f].input];
    const Batch& b = batch.num_feeds == 0 ? batch : batch.feeds[f];
    // Sparse batches always have offsets; ids may be null when no example has any.
    if (input.kind == InputKind::kSparseIds && b.offsets == nullptr) {
      throw InvalidInput("dataset: input '" + input.name + "' needs sparse ids, got dense rows");
    }
    if (input.kind == InputKind::kDense && (b.dense == nullptr || b.dense_width != input.dim)) {
      throw InvalidInput("dataset: input '" + input.name + "' needs dense rows of width " +
                         std::to_string(input.dim));
    }
  }
  if (spec_.loss == LossType::kMeanSquaredError && batch.size > 0 && batch.targets == nullptr) {
    throw InvalidInput("dataset: mean_squared_error needs float targets, the batch has none");
  }
}

const float* Model::run_layers(const Batch& batch, bool training) {
  check_batch(batch);
  LayerPass pass(spec_, layers_, gradients_, buffers_, batch, training, step_,
                 fused_sgd_learning_rate_);
  for (ModelLayer& layer : layers_) layer.op->forward(pass, layer);
  return layers_.back().output.data();
}

LossSums Model::loss(const Batch& batch, const float* logits, float grad_scale, float* grad) const {
  if (spec_.loss == LossType::kMeanSquaredError) {
    return mean_squared_error(logits, batch.targets, batch.size, spec_.output_width, grad_scale,
                              grad);
  }
  return compute_loss(spec_.loss, logits, batch.labels, batch.size, spec_.output_width, grad_scale,
                      grad);
}

LossSums Model::forward(const Batch& batch) {
  const float* logits = run_layers(batch, false);
  return loss(batch, logits, 0.0f, nullptr);
}

LossSums Model::forward_training(const Batch& batch) {
  const float* logits = run_layers(batch, true);
  return loss(batch, logits, 0.0f, nullptr);
}

LossSums Model::forward_backward(const Batch& batch) {
  const float* logits = run_layers(batch, true);
  ++step_;
  const std::size_t n = batch.size;
  for (ParameterGradient& g : gradients_) {
    if (g.row_sparse) {
      g.touched_rows.clear();
      g.values.clear();
    } else {
      std::fill(g.values.begin(), g.values.end(), 0.0f);
    }
  }
  if (n == 0) return LossSums{};
  const LossSums sums =
      loss(batch, logits, 1.0f / static_cast<float>(n), layers_.back().grad_output.data());
  std::fill(buffers_.sent.begin(), buffers_.sent.end(), false);
  std::fill(buffers_.table_written.begin(), buffers_.table_written.end(), false);
  // The step the forward drew its dropout masks for (step_ counts this one already).
  LayerPass pass(spec_, layers_, gradients_, buffers_, batch, true, step_ - 1,
                 fused_sgd_learning_rate_);
  for (std::size_t i = layers_.size(); i-- > 0;) layers_[i].op->backward(pass, layers_[i]);
  return sums;
}

}  // namespace fedleaf::core
