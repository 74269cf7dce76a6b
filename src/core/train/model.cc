#include "core/train/model.h"

#include <algorithm>

#include "core/error.h"
#include "core/train/activation.h"
#include "core/train/layer_registry.h"

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
      return {&t, static_cast<int>(gradients_.size() - 1)};
    }

   private:
    Parameters& parameters_;
    std::vector<ParameterGradient>& gradients_;
    const std::vector<ParameterSpec> params_;
    std::size_t next_ = 0;
  };
  Binder binder(parameters, gradients_, spec_);
  for (const LayerSpec& l : spec_.layers) {
    ModelLayer layer;
    layer.type = l.type;
    layer.width = l.output_width;
    layer.output.assign(max_batch_size * l.output_width, 0.0f);
    layer.grad_output.assign(max_batch_size * l.output_width, 0.0f);
    const LayerKind& kind = layer_kind(l.type);
    if (kind.make != nullptr) kind.make(l, binder, layer);
    layers_.push_back(std::move(layer));
  }
}

void Model::check_batch(const Batch& batch) const {
  if (batch.size > max_batch_size_) {
    throw InvalidInput("batch of " + std::to_string(batch.size) +
                       " examples exceeds the model's max_batch_size " +
                       std::to_string(max_batch_size_));
  }
  // Sparse batches always have offsets; ids may be null when no example has any.
  if (spec_.input_kind == InputKind::kSparseIds && batch.offsets == nullptr) {
    throw InvalidInput("dataset: input '" + spec_.input_name +
                       "' needs sparse ids, got dense rows");
  }
  if (spec_.input_kind == InputKind::kDense &&
      (batch.dense == nullptr || batch.dense_width != spec_.input_dim)) {
    throw InvalidInput("dataset: input '" + spec_.input_name + "' needs dense rows of width " +
                       std::to_string(spec_.input_dim));
  }
}

const float* Model::run_layers(const Batch& batch) {
  check_batch(batch);
  const std::size_t n = batch.size;
  const float* x = batch.dense;
  for (ModelLayer& layer : layers_) {
    float* out = layer.output.data();
    if (layer.embedding) {
      layer.embedding->forward(batch, out);
    } else if (layer.dense) {
      layer.dense->forward(x, n, out);
    } else {
      activation_forward(layer.type, x, out, n * layer.width);
    }
    x = out;
  }
  return x;
}

LossSums Model::forward(const Batch& batch) {
  const float* logits = run_layers(batch);
  return compute_loss(spec_.loss, logits, batch.labels, batch.size, spec_.output_width, 0.0f,
                      nullptr);
}

LossSums Model::forward_backward(const Batch& batch) {
  const float* logits = run_layers(batch);
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
      compute_loss(spec_.loss, logits, batch.labels, n, spec_.output_width,
                   1.0f / static_cast<float>(n), layers_.back().grad_output.data());
  for (std::size_t i = layers_.size(); i-- > 0;) {
    ModelLayer& layer = layers_[i];
    const float* gy = layer.grad_output.data();
    const float* x = i == 0 ? batch.dense : layers_[i - 1].output.data();
    float* gx = i == 0 ? nullptr : layers_[i - 1].grad_output.data();
    if (layer.embedding && fused_sgd_learning_rate_) {
      layer.embedding->backward_sgd(batch, gy, *fused_sgd_learning_rate_);
    } else if (layer.embedding) {
      layer.embedding->backward(batch, gy, gradients_[layer.weight_gradient]);
    } else if (layer.dense) {
      ParameterGradient* gb = layer.bias_gradient < 0 ? nullptr : &gradients_[layer.bias_gradient];
      layer.dense->backward(x, gy, n, gradients_[layer.weight_gradient], gb, gx);
    } else if (gx != nullptr) {
      activation_backward(layer.type, layer.output.data(), gy, gx, n * layer.width);
    }
  }
  return sums;
}

void check_dataset_fits(const ModelSpec& spec, const Dataset& dataset) {
  const std::string input = "plan.model.inputs." + spec.input_name;
  if (dataset.size() == 0) throw InvalidInput("dataset: no examples");
  if (spec.input_kind == InputKind::kSparseIds) {
    if (!dataset.is_sparse()) {
      throw InvalidInput("dataset: dense rows, but " + input + " is sparse_ids");
    }
    const LayerSpec& emb = spec.layers.front();
    const CompactRows& distinct = dataset.distinct_ids();
    if (distinct.end_row() > emb.vocab) {
      // Compact ids increase with ids: the ids not below vocab are the compact ids from `first`.
      const std::vector<std::uint32_t> rows = distinct.rows();
      const auto first = static_cast<std::uint32_t>(
          std::lower_bound(rows.begin(), rows.end(), emb.vocab) - rows.begin());
      const std::vector<std::uint32_t>& compact = dataset.compact_ids();
      const std::vector<std::uint32_t>& offsets = dataset.offsets();
      const auto j =
          static_cast<std::size_t>(std::find_if(compact.begin(), compact.end(),
                                                [first](std::uint32_t c) { return c >= first; }) -
                                   compact.begin());
      const auto i = static_cast<std::size_t>(std::upper_bound(offsets.begin(), offsets.end(), j) -
                                              offsets.begin() - 1);
      throw InvalidInput("dataset: id " + std::to_string(rows[compact[j]]) + " of example " +
                         std::to_string(i) + " is not below " + emb.path + ".vocab " +
                         std::to_string(emb.vocab));
    }
  } else if (dataset.is_sparse() || dataset.num_features() != spec.input_dim) {
    throw InvalidInput("dataset: " + input + " needs dense rows of width " +
                       std::to_string(spec.input_dim) + ", the dataset has " +
                       (dataset.is_sparse()
                            ? std::string("sparse ids")
                            : "rows of width " + std::to_string(dataset.num_features())));
  }
  const std::vector<std::int32_t>& labels = dataset.labels();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const bool ok =
        spec.loss == LossType::kSigmoidCrossEntropy
            ? (labels[i] == 0 || labels[i] == 1)
            : (labels[i] >= 0 && static_cast<std::size_t>(labels[i]) < spec.output_width);
    if (!ok) {
      throw InvalidInput("dataset: label " + std::to_string(labels[i]) + " of example " +
                         std::to_string(i) + " is invalid for plan.model.loss (" +
                         (spec.loss == LossType::kSigmoidCrossEntropy
                              ? std::string("labels 0 or 1")
                              : "class ids below " + std::to_string(spec.output_width)) +
                         ")");
    }
  }
}

}  // namespace fedleaf::core
