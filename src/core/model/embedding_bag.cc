#include "core/model/embedding_bag.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <utility>

#include "core/error.h"
#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/kernels/dense_kernels.h"
#include "core/model/layer_pass.h"
#include "core/model/model_layer.h"

namespace fedleaf::core {

namespace {

// The embedding_bag among `layers` named `name` that owns a table, or InvalidInput at `path`.
std::size_t table_owner(const std::vector<LayerSpec>& layers, const std::string& name,
                        const std::string& path) {
  for (std::size_t k = 0; k < layers.size(); ++k) {
    const LayerSpec& l = layers[k];
    if (l.name != name) continue;
    if (dynamic_cast<const EmbeddingBagConfig*>(l.config.get()) == nullptr) {
      plan_json::fail(path, "'" + name + "' is not an embedding_bag layer");
    }
    if (!l.owned_table) {
      plan_json::fail(path, "'" + name + "' shares the table of '" + layers[l.table_layer].name +
                                "': name that layer");
    }
    return k;
  }
  plan_json::fail(path, "no earlier embedding_bag layer named '" + name + "' owns a table");
}

}  // namespace

void parse_embedding_bag_spec(const nlohmann::json& l, const LayerInput& input, LayerSpec spec,
                              std::vector<LayerSpec>& layers) {
  using namespace plan_json;
  const std::string& path = spec.path;
  check_known_fields(l, path, kEmbeddingBagFields);
  const LayerSource& source = input.sources.front();
  if (source.kind != InputKind::kSparseIds) {
    fail(path + ".input", "embedding_bag reads a sparse_ids input, '" + source.name + "' is " +
                              (source.is_input ? "a dense input" : "a layer's output"));
  }
  auto config = std::make_shared<EmbeddingBagConfig>();
  config->combiner = get_choice(l, path, "combiner", "mean", "combiner", kCombiners);
  // Off by default, so that every plan written before the field keeps its parameters.
  config->use_bias = get_bool(l, path, "use_bias", false);
  if (const json* table = find_field(l, "table")) {
    if (!table->is_string()) fail(path + ".table", "expected the name of an embedding_bag layer");
    const std::string owner_name = table->get<std::string>();
    spec.table_layer = table_owner(layers, owner_name, path + ".table");
    config->table = owner_name;
    const auto& owner = layer_config<EmbeddingBagConfig>(layers[spec.table_layer]);
    for (const char* field : {"initializer", "init_scale"}) {
      if (find_field(l, field) != nullptr) {
        fail(path + "." + field, "set by the table's owner '" + owner_name + "'");
      }
    }
    // A second lookup declares no parameter, so it has no bias tensor; the owner's bias belongs
    // to the owner's output alone (a shared table is not a shared layer).
    if (config->use_bias) {
      fail(path + ".use_bias", "a lookup of the table of '" + owner_name +
                                   "' has no parameter of its own: no bias (give an own table "
                                   "for a biased lookup)");
    }
    const auto same = [&](const char* field, std::size_t owners) {
      if (find_field(l, field) == nullptr) return;
      const std::size_t mine = get_size(l, path, field, std::nullopt, 1, 0x7fffffffull);
      if (mine != owners) {
        fail(path + ".table", "'" + owner_name + "' has " + field + " " + std::to_string(owners) +
                                  ", this layer says " + field + " " + std::to_string(mine) +
                                  " (a table shared across different " + field + "s)");
      }
    };
    same("vocab", owner.vocab);
    same("dim", owner.dim);
    config->vocab = owner.vocab;
    config->dim = owner.dim;
  } else {
    config->vocab = get_size(l, path, "vocab", std::nullopt, 1, 0x7fffffffull);
    config->dim = get_size(l, path, "dim", std::nullopt, 1, 1u << 20);
    config->initializer =
        get_choice(l, path, "initializer", "uniform", "initializer", kEmbeddingInitializers);
    config->init_scale =
        get_float(l, path, "init_scale", 0.05f, ">= 0", [](double d) { return d >= 0; });
    spec.table_layer = layers.size();
    spec.owned_table = TableSpec{spec.name + "/weight", config->vocab, path + ".vocab"};
  }
  spec.input_width = 0;
  spec.output_width = config->dim;
  spec.config = std::move(config);
  layers.push_back(std::move(spec));
}

void embedding_bag_parameters(const LayerSpec& spec, std::vector<ParameterSpec>& out) {
  const auto& config = layer_config<EmbeddingBagConfig>(spec);
  if (!config.table.empty()) return;  // a second lookup of another layer's table
  ParameterSpec w;
  w.name = spec.owned_table->parameter;
  w.shape = {config.vocab, config.dim};
  w.row_sparse_gradient = true;
  w.initializer = config.initializer;
  w.init_scale = config.init_scale;
  w.declared_by = spec.path;
  out.push_back(w);
  if (config.use_bias) {
    ParameterSpec b;
    b.name = spec.name + "/bias";
    b.shape = {config.dim};
    b.initializer = Initializer::kZeros;
    b.declared_by = spec.path;
    out.push_back(b);
  }
}

namespace {

class EmbeddingBagOp : public LayerOp {
 public:
  explicit EmbeddingBagOp(EmbeddingBag bag) : bag_(std::move(bag)) {}
  void forward(LayerPass& pass, ModelLayer& layer) override {
    bag_.forward(pass.feed(layer.feed), layer.output.data());
  }
  void backward(LayerPass& pass, ModelLayer& layer) override {
    const Batch& ids = pass.feed(layer.feed);
    const float* gy = layer.grad_output.data();
    // The bias is a dense parameter: its gradient even under fused SGD (the optimizer steps it).
    if (layer.bias_gradient >= 0) {
      bag_.backward_bias(pass.size(), gy, pass.gradient(layer.bias_gradient).values.data());
    }
    const int g = layer.weight_gradient;
    if (const std::optional<float> rate = pass.fused_sgd_learning_rate()) {
      bag_.backward_sgd(ids, gy, *rate);
    } else if (pass.first_write(g)) {
      bag_.backward(ids, gy, pass.gradient(g));
    } else {
      // A second lookup of a shared table: its rows summed into the table's one gradient.
      if (lookup_gradient_.row_size == 0) {
        const ParameterGradient& table = pass.gradient(g);
        lookup_gradient_.name = table.name;
        lookup_gradient_.parameter = table.parameter;
        lookup_gradient_.rows = table.rows;
        lookup_gradient_.row_size = table.row_size;
        lookup_gradient_.row_sparse = true;
      }
      bag_.backward(ids, gy, lookup_gradient_);
      pass.merge_row_sparse(g, lookup_gradient_);
    }
  }

 private:
  EmbeddingBag bag_;
  ParameterGradient lookup_gradient_;  // a shared table's second lookup: its own rows
};

}  // namespace

void make_embedding_bag(const LayerSpec& spec, ParameterBinder& binder,
                        std::size_t /*max_batch_size*/, ModelLayer& layer) {
  const auto& config = layer_config<EmbeddingBagConfig>(spec);
  const ParameterBinder::Bound table =
      config.table.empty() ? binder.next() : binder.bound(config.table + "/weight");
  const float* bias = nullptr;
  if (config.use_bias) {
    const ParameterBinder::Bound b = binder.next();
    layer.bias_gradient = b.gradient;
    bias = b.tensor->data<float>();
  }
  layer.op = std::make_unique<EmbeddingBagOp>(EmbeddingBag(spec.name, table.tensor->data<float>(),
                                                           table.tensor->shape()[0], config.dim,
                                                           config.combiner, bias));
  layer.weight_gradient = table.gradient;
}

EmbeddingBag::EmbeddingBag(std::string name, float* table, std::size_t rows, std::size_t dim,
                           Combiner combiner, const float* bias)
    : name_(std::move(name)),
      table_(table),
      rows_(rows),
      dim_(dim),
      combiner_(combiner),
      bias_(bias) {}

void EmbeddingBag::forward(const Batch& batch, float* out) {
  const std::uint32_t nnz = batch.offsets[batch.size];
  // One branch-free pass checks every id, so the per-id loops below carry no check; a batch whose
  // gatherer vouches for its ids (compact rows) skips it.
  std::uint32_t max_id = 0;
  if (batch.ids_below == 0 || batch.ids_below > rows_) {
    for (std::uint32_t j = 0; j < nnz; ++j) max_id = std::max(max_id, batch.ids[j]);
  }
  if (nnz > 0 && max_id >= rows_) {
    const std::uint32_t id =
        *std::find_if(batch.ids, batch.ids + nnz, [&](std::uint32_t i) { return i >= rows_; });
    throw InvalidInput("embedding_bag '" + name_ + "': id " + std::to_string(id) +
                       " is not below the table's " + std::to_string(rows_) + " rows");
  }
  forward_ids_ = batch.ids;
  forward_nnz_ = nnz;
  scales_.resize(batch.size);
  for (std::size_t b = 0; b < batch.size; ++b) {
    const std::uint32_t begin = batch.offsets[b];
    const std::uint32_t end = batch.offsets[b + 1];
    float* row = out + b * dim_;
    float abs_sum = 0.0f;
    float square_sum = 0.0f;
    if (batch.weights == nullptr) {
      // All weights 1: both sums count the ids (exact below 2^24 ids per example).
      abs_sum = square_sum = static_cast<float>(end - begin);
      if (dim_ == 1) {
        // dim 1 (a linear model over hashed features): the sum stays in a register.
        float sum = 0.0f;
        for (std::uint32_t j = begin; j < end; ++j) sum += 1.0f * table_[batch.ids[j]];
        row[0] = sum;
      } else {
        kernels::gather_weighted_sum(dim_, end - begin, batch.ids + begin, nullptr, table_, row);
      }
    } else {
      float sum = 0.0f;
      for (std::uint32_t j = begin; j < end; ++j) {
        const float w = batch.weights[j];
        if (dim_ == 1) sum += w * table_[batch.ids[j]];
        abs_sum += std::fabs(w);
        square_sum += w * w;
      }
      if (dim_ == 1) {
        row[0] = sum;
      } else {
        kernels::gather_weighted_sum(dim_, end - begin, batch.ids + begin, batch.weights + begin,
                                     table_, row);
      }
    }
    float scale = 1.0f;
    if (combiner_ == Combiner::kMean) scale = abs_sum > 0.0f ? 1.0f / abs_sum : 0.0f;
    if (combiner_ == Combiner::kSqrtn)
      scale = square_sum > 0.0f ? 1.0f / std::sqrt(square_sum) : 0.0f;
    if (scale != 1.0f) kernels::scale(dim_, scale, row);
    // After the combiner, as Keras adds a Dense's bias after x W (1 · bias[k] is exact, so the
    // SIMD and scalar axpy agree bit for bit).
    if (bias_ != nullptr) kernels::axpy(dim_, 1.0f, bias_, row);
    scales_[b] = scale;
  }
}

void EmbeddingBag::backward_bias(std::size_t batch_size, const float* grad_out,
                                 float* bias_gradient) const {
  if (bias_ == nullptr) return;
  for (std::size_t b = 0; b < batch_size; ++b) {
    kernels::axpy(dim_, 1.0f, grad_out + b * dim_, bias_gradient);
  }
}

void EmbeddingBag::check_last_forward(const Batch& batch) const {
  if (batch.ids != forward_ids_ || batch.offsets[batch.size] != forward_nnz_ ||
      scales_.size() != batch.size) {
    throw InvalidInput("embedding_bag '" + name_ +
                       "': backward needs the batch of the last forward");
  }
}

void EmbeddingBag::backward_sgd(const Batch& batch, const float* grad_out, float learning_rate) {
  check_last_forward(batch);
  for (std::size_t b = 0; b < batch.size; ++b) {
    const std::uint32_t begin = batch.offsets[b];
    const std::uint32_t end = batch.offsets[b + 1];
    const float step = -learning_rate * scales_[b];
    const float* weights = batch.weights ? batch.weights + begin : nullptr;
    if (dim_ != 1) {
      kernels::scatter_weighted_add(dim_, end - begin, batch.ids + begin, weights, step,
                                    grad_out + b * dim_, table_);
      continue;
    }
    // dim 1 (a linear model): the per-id work is one load, one multiply-add and one store.
    const float g = grad_out[b];
    for (std::uint32_t j = begin; j < end; ++j) {
      const float a = (weights ? weights[j - begin] : 1.0f) * step;
      if (a != 0.0f) table_[batch.ids[j]] += a * g;
    }
  }
}

void EmbeddingBag::backward(const Batch& batch, const float* grad_out,
                            ParameterGradient& gradient) {
  check_last_forward(batch);
  const std::uint32_t nnz = batch.offsets[batch.size];
  slot_of_.resize(nnz);
  batch_rows_.number(batch.ids, nnz, rows_, gradient.touched_rows, slot_of_.data());
  const auto count = static_cast<std::uint32_t>(gradient.touched_rows.size());
  gradient.values.assign(static_cast<std::size_t>(count) * dim_, 0.0f);
  float* values = gradient.values.data();
  for (std::size_t b = 0; b < batch.size; ++b) {
    const float* g = grad_out + b * dim_;
    const std::uint32_t begin = batch.offsets[b];
    const std::uint32_t end = batch.offsets[b + 1];
    if (dim_ != 1) {
      kernels::scatter_weighted_add(dim_, end - begin, slot_of_.data() + begin,
                                    batch.weights ? batch.weights + begin : nullptr, scales_[b], g,
                                    values);
      continue;
    }
    for (std::uint32_t j = begin; j < end; ++j) {
      const float w = (batch.weights ? batch.weights[j] : 1.0f) * scales_[b];
      if (w != 0.0f) values[slot_of_[j]] += w * g[0];
    }
  }
}

}  // namespace fedleaf::core
