#include "core/model/model.h"

#include <algorithm>

#include "core/error.h"
#include "core/model/activation.h"
#include "core/model/add_layer.h"
#include "core/model/concatenate.h"
#include "core/model/dropout.h"
#include "core/model/layer_registry.h"

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

// into += add, both row-sparse gradients with sorted unique rows (each lookup's BatchRows
// order): the union of their rows, in increasing order, a row in both summed into += add.
void add_row_sparse(ParameterGradient& into, const ParameterGradient& add,
                    std::vector<std::uint32_t>& rows, std::vector<float>& values) {
  const std::size_t d = into.row_size;
  rows.clear();
  values.clear();
  std::size_t i = 0, j = 0;
  const std::size_t ni = into.touched_rows.size(), nj = add.touched_rows.size();
  while (i < ni || j < nj) {
    const bool take_i = j == nj || (i < ni && into.touched_rows[i] <= add.touched_rows[j]);
    const bool take_j = i == ni || (j < nj && add.touched_rows[j] <= into.touched_rows[i]);
    rows.push_back(take_i ? into.touched_rows[i] : add.touched_rows[j]);
    const std::size_t at = values.size();
    values.resize(at + d, 0.0f);
    if (take_i) {
      std::copy(into.values.begin() + i * d, into.values.begin() + (i + 1) * d,
                values.begin() + at);
      ++i;
    }
    if (take_j) {
      for (std::size_t k = 0; k < d; ++k) values[at + k] += add.values[j * d + k];
      ++j;
    }
  }
  into.touched_rows.swap(rows);
  into.values.swap(values);
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
    layer.type = l.type;
    layer.width = l.output_width;
    layer.sources = l.sources;
    layer.feed = l.feed;
    layer.output.assign(max_batch_size * l.output_width, 0.0f);
    layer.grad_output.assign(max_batch_size * l.output_width, 0.0f);
    if (l.type == LayerType::kDropout) layer.mask.assign(max_batch_size * l.output_width, 0.0f);
    const LayerKind& kind = layer_kind(l.type);
    if (kind.make != nullptr) kind.make(l, binder, layer);
    if (layer.embedding) {
      layer.lookup_gradient = gradients_[static_cast<std::size_t>(layer.weight_gradient)];
      layer.lookup_gradient.values.clear();
    }
    widest = std::max(widest, l.output_width);
    layers_.push_back(std::move(layer));
  }
  // A layer read by several layers receives a gradient from each: the second and later ones go
  // through scratch_ (as wide as the source's output: at most `widest`), which a chain never
  // needs.
  std::vector<std::size_t> reads(layers_.size(), 0);
  bool read_twice = false;
  for (const ModelLayer& layer : layers_) {
    for (const NodeRef& s : layer.sources) {
      if (!s.is_input) read_twice |= ++reads[s.index] > 1;
    }
  }
  if (read_twice) scratch_.assign(max_batch_size * widest, 0.0f);
  sent_.assign(layers_.size(), false);
  table_written_.assign(gradients_.size(), false);
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
    const Batch& b = feed(batch, f);
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

const float* Model::rows_of(const Batch& batch, const NodeRef& source) const {
  if (source.is_input) return feed(batch, spec_.inputs[source.index].feed).dense;
  return layers_[source.index].output.data();
}

const float* Model::run_layers(const Batch& batch, bool training) {
  check_batch(batch);
  const std::size_t n = batch.size;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    ModelLayer& layer = layers_[i];
    float* out = layer.output.data();
    const std::size_t count = n * layer.width;
    if (layer.embedding) {
      layer.embedding->forward(feed(batch, layer.feed), out);
      continue;
    }
    const float* x = rows_of(batch, layer.sources.front());
    if (layer.dense) {
      layer.dense->forward(x, n, out);
    } else if (layer.type == LayerType::kConcatenate || layer.type == LayerType::kAdd) {
      sources_.clear();
      widths_.clear();
      for (const NodeRef& s : layer.sources) {
        sources_.push_back(rows_of(batch, s));
        widths_.push_back(s.is_input ? spec_.inputs[s.index].dim : layers_[s.index].width);
      }
      if (layer.type == LayerType::kConcatenate) {
        concatenate_forward(sources_, widths_, n, out);
      } else {
        add_forward(sources_, count, out);
      }
    } else if (layer.type == LayerType::kDropout) {
      if (training) {
        const LayerSpec& l = spec_.layers[i];
        dropout_mask(l.seed, step_, n, layer.width, l.rate, layer.mask.data());
        dropout_forward(x, layer.mask.data(), count, out);
      } else {
        std::copy(x, x + count, out);
      }
    } else {
      activation_forward(layer.type, x, out, count);
    }
  }
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

float* Model::gradient_target(const NodeRef& source) {
  if (source.is_input) return nullptr;
  return sent_[source.index] ? scratch_.data() : layers_[source.index].grad_output.data();
}

void Model::gradient_sent(const NodeRef& source, std::size_t count) {
  if (source.is_input) return;
  if (!sent_[source.index]) {
    sent_[source.index] = true;
    return;
  }
  float* into = layers_[source.index].grad_output.data();
  for (std::size_t k = 0; k < count; ++k) into[k] += scratch_[k];
}

void Model::backward_layer(std::size_t i, const Batch& batch) {
  ModelLayer& layer = layers_[i];
  const std::size_t n = batch.size;
  const float* gy = layer.grad_output.data();
  if (layer.embedding) {
    const Batch& ids = feed(batch, layer.feed);
    const auto g = static_cast<std::size_t>(layer.weight_gradient);
    // The bias is a dense parameter: its gradient even under fused SGD (the optimizer steps it).
    if (layer.bias_gradient >= 0) {
      layer.embedding->backward_bias(n, gy, gradients_[layer.bias_gradient].values.data());
    }
    if (fused_sgd_learning_rate_) {
      layer.embedding->backward_sgd(ids, gy, *fused_sgd_learning_rate_);
    } else if (!table_written_[g]) {
      layer.embedding->backward(ids, gy, gradients_[g]);
      table_written_[g] = true;
    } else {
      // A second lookup of a shared table: its rows summed into the table's one gradient.
      layer.embedding->backward(ids, gy, layer.lookup_gradient);
      add_row_sparse(gradients_[g], layer.lookup_gradient, merged_rows_, merged_values_);
    }
    return;
  }
  if (layer.type == LayerType::kConcatenate || layer.type == LayerType::kAdd) {
    std::size_t offset = 0;
    for (const NodeRef& s : layer.sources) {
      const std::size_t width = s.is_input ? spec_.inputs[s.index].dim : layers_[s.index].width;
      float* gx = gradient_target(s);
      if (gx != nullptr) {
        if (layer.type == LayerType::kConcatenate) {
          concatenate_backward(gy, layer.width, offset, width, n, gx);
        } else {
          std::copy(gy, gy + n * width, gx);
        }
        gradient_sent(s, n * width);
      }
      offset += width;
    }
    return;
  }
  const NodeRef& source = layer.sources.front();
  const std::size_t in_width =
      source.is_input ? spec_.inputs[source.index].dim : layers_[source.index].width;
  float* gx = gradient_target(source);
  if (layer.dense) {
    ParameterGradient* gb = layer.bias_gradient < 0 ? nullptr : &gradients_[layer.bias_gradient];
    layer.dense->backward(rows_of(batch, source), gy, n, gradients_[layer.weight_gradient], gb, gx);
  } else if (gx == nullptr) {
    return;  // an elementwise layer on a model input: nothing to send back
  } else if (layer.type == LayerType::kDropout) {
    dropout_backward(gy, layer.mask.data(), n * layer.width, gx);
  } else {
    activation_backward(layer.type, layer.output.data(), gy, gx, n * layer.width);
  }
  if (gx != nullptr) gradient_sent(source, n * in_width);
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
  std::fill(sent_.begin(), sent_.end(), false);
  std::fill(table_written_.begin(), table_written_.end(), false);
  for (std::size_t i = layers_.size(); i-- > 0;) backward_layer(i, batch);
  return sums;
}

std::vector<std::size_t> dataset_inputs_for(const ModelSpec& spec, const Dataset& dataset) {
  if (dataset.num_inputs() == 1 && dataset.input_name(0).empty()) {
    if (spec.inputs.size() != 1) {
      throw InvalidInput("dataset: one unnamed input, but plan.model.inputs has " +
                         std::to_string(spec.inputs.size()) +
                         " (a dataset from_inputs names them)");
    }
    return {0};
  }
  std::vector<std::size_t> out;
  for (const InputSpec& input : spec.inputs) {
    std::size_t k = 0;
    while (k < dataset.num_inputs() && dataset.input_name(k) != input.name) ++k;
    if (k == dataset.num_inputs()) {
      throw InvalidInput("dataset: no input '" + input.name + "' (" + input.path + ")");
    }
    out.push_back(k);
  }
  for (std::size_t k = 0; k < dataset.num_inputs(); ++k) {
    if (std::find(out.begin(), out.end(), k) == out.end()) {
      throw InvalidInput("dataset: input '" + dataset.input_name(k) +
                         "' is no input of plan.model.inputs");
    }
  }
  return out;
}

namespace {

// Throws when an id of dataset input `k` is not below `layer`'s vocab.
void check_ids_below(const Dataset& dataset, std::size_t k, const LayerSpec& emb) {
  const CompactRows& distinct = dataset.distinct_ids(k);
  if (distinct.end_row() <= emb.vocab) return;
  // Compact ids increase with ids: the ids not below vocab are the compact ids from `first`.
  const std::vector<std::uint32_t> rows = distinct.rows();
  const auto first = static_cast<std::uint32_t>(
      std::lower_bound(rows.begin(), rows.end(), emb.vocab) - rows.begin());
  const std::vector<std::uint32_t>& compact = dataset.compact_ids(k);
  const std::vector<std::uint32_t>& offsets = dataset.offsets(k);
  const auto j =
      static_cast<std::size_t>(std::find_if(compact.begin(), compact.end(),
                                            [first](std::uint32_t c) { return c >= first; }) -
                               compact.begin());
  const auto i = static_cast<std::size_t>(std::upper_bound(offsets.begin(), offsets.end(), j) -
                                          offsets.begin() - 1);
  const std::string input =
      dataset.input_name(k).empty() ? "" : " of input '" + dataset.input_name(k) + "'";
  throw InvalidInput("dataset: id " + std::to_string(rows[compact[j]]) + " of example " +
                     std::to_string(i) + input + " is not below " + emb.path + ".vocab " +
                     std::to_string(emb.vocab));
}

}  // namespace

void check_dataset_fits(const ModelSpec& spec, const Dataset& dataset) {
  if (dataset.size() == 0) throw InvalidInput("dataset: no examples");
  const std::vector<std::size_t> from = dataset_inputs_for(spec, dataset);
  for (std::size_t m = 0; m < spec.inputs.size(); ++m) {
    const InputSpec& in = spec.inputs[m];
    const std::size_t k = from[m];
    if (in.kind == InputKind::kSparseIds) {
      if (!dataset.is_sparse(k)) {
        throw InvalidInput("dataset: dense rows, but " + in.path + " is sparse_ids");
      }
    } else if (dataset.is_sparse(k) || dataset.num_features(k) != in.dim) {
      throw InvalidInput("dataset: " + in.path + " needs dense rows of width " +
                         std::to_string(in.dim) + ", the dataset has " +
                         (dataset.is_sparse(k)
                              ? std::string("sparse ids")
                              : "rows of width " + std::to_string(dataset.num_features(k))));
    }
  }
  for (const LayerSpec& l : spec.layers) {
    if (l.type == LayerType::kEmbeddingBag) {
      check_ids_below(dataset, from[l.sources.front().index], spec.layers[l.table_layer]);
    }
  }
  if (spec.loss == LossType::kMeanSquaredError) {
    if (dataset.target_width() != spec.output_width) {
      throw InvalidInput("dataset: plan.model.loss mean_squared_error needs " +
                         std::to_string(spec.output_width) + " float target(s) per example, " +
                         (dataset.has_targets()
                              ? "the dataset has " + std::to_string(dataset.target_width())
                              : std::string("the dataset has class labels")));
    }
    return;
  }
  if (dataset.has_targets()) {
    throw InvalidInput(
        "dataset: float targets are for mean_squared_error, plan.model.loss needs "
        "class labels");
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
