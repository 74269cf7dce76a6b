// The model section of a plan, parsed and checked: its named inputs, its graph of layers (each
// parsed by its own entry of the layer table, layer_registry.h), its loss, and the parameters the
// layers declare. What every layer, the model graph and its walk (model.h) read; the rest of a
// plan (training, updates, features) is core/train/plan.h's, which holds a ModelSpec.
//
//   ModelSpec model = parse_model_spec(plan_object);   // plan_object["model"] parsed
//   for (const ParameterSpec& p : parameter_specs(model)) ...
//
// The schema is plan.h's header comment ("model": ...). Errors are InvalidInput naming the JSON
// path and the rule ("plan.model.layers[1].units: missing").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/data/input_columns.h"

namespace fedleaf::core {

struct LayerKind;

enum class Initializer { kUniform, kGlorotUniform, kZeros };
enum class LossType { kSoftmaxCrossEntropy, kSigmoidCrossEntropy, kMeanSquaredError };

// What a layer reads: a model input (ModelSpec::inputs[index]) or an earlier layer
// (ModelSpec::layers[index]).
struct NodeRef {
  bool is_input = false;
  std::size_t index = 0;
};
inline constexpr std::array kModelFields{"inputs", "layers", "output", "loss"};
inline constexpr std::array kInputFields{"type", "dim", "features"};
inline constexpr std::array kInputKinds{std::pair{"sparse_ids", InputKind::kSparseIds},
                                        std::pair{"dense", InputKind::kDense}};
inline constexpr std::array kLosses{
    std::pair{"softmax_cross_entropy", LossType::kSoftmaxCrossEntropy},
    std::pair{"sigmoid_cross_entropy", LossType::kSigmoidCrossEntropy},
    std::pair{"mean_squared_error", LossType::kMeanSquaredError}};

// What a layer's kind parsed from its own fields (units, vocab, rate, ...): each kind derives its
// config from this and only its own file reads it back (layer_config<T>), so the graph, the walk
// and the plan know a layer by LayerSpec's generic facts alone.
class LayerConfig {
 public:
  virtual ~LayerConfig() = default;
};

// A table of rows that sparse ids index (an embedding_bag's weight), as the layer owning it
// declares it: what the dataset's ids and the plan's feature buckets are checked against.
struct TableSpec {
  std::string parameter;   // "<owner>/weight"
  std::size_t rows = 0;    // ids must be below it
  std::string rows_field;  // the field setting rows, for messages ("plan.model.layers[0].vocab")
};

struct LayerSpec {
  const LayerKind* kind = nullptr;  // its entry of the layer table (layer_kind.h)
  std::string name;                 // empty for unnamed activation layers
  std::string path;                 // "plan.model.layers[i]", for error messages
  std::size_t input_width = 0;      // derived: width of the layer's input (concatenate: the sum)
  std::size_t output_width = 0;     // derived
  std::vector<NodeRef> sources;     // what the layer reads, in order (several: concatenate, add)
  // A layer owning a table that ids index: the table (its kind's parse sets it).
  std::optional<TableSpec> owned_table;
  // A layer reading a sparse_ids input: the layer owning the table its ids index (its kind's
  // parse sets it), and the feed (ModelSpec::feeds) its ids come from (the graph check sets it).
  std::size_t table_layer = 0;
  std::size_t feed = 0;
  std::shared_ptr<const LayerConfig> config;  // its kind's own fields; null for a kind with none
};

// layer_config's error: InvalidInput "<path>: the layer's config is not its kind's".
[[noreturn]] void throw_wrong_layer_config(const LayerSpec& spec);

// The config of `spec`, which the kind's own file knows to be a Config; InvalidInput naming the
// layer when it is not (a spec built for another kind).
template <class Config>
const Config& layer_config(const LayerSpec& spec) {
  if (const auto* config = dynamic_cast<const Config*>(spec.config.get())) return *config;
  throw_wrong_layer_config(spec);
}

struct InputSpec {
  std::string name;
  std::string path;  // "plan.model.inputs.<name>"
  InputKind kind = InputKind::kSparseIds;
  std::size_t dim = 0;  // dense
  // The input's "features" object as JSON text, "" when absent: how records become this input
  // (parsed and checked by core/features/, not here).
  std::string features_json;
  std::size_t feed = 0;  // dense: the feed of its rows
};

// One stream of rows a model reads from each batch: a dense input's rows, or a sparse input's
// ids as rows of one embedding table (an input looked up in two different tables is two feeds,
// since each table numbers its compact rows over the ids of every input feeding it).
struct FeedSpec {
  std::size_t input = 0;  // ModelSpec::inputs index
  bool sparse = false;
  std::size_t table_layer = 0;  // sparse: the layer owning the table
};

struct ModelSpec {
  std::vector<InputSpec> inputs;  // by name (the JSON object's key order)
  // Dense layers with an "activation" are expanded into a dense layer and an activation layer.
  // Topologically ordered; the last is the output.
  std::vector<LayerSpec> layers;
  std::vector<FeedSpec> feeds;  // in the order layers first read them
  LossType loss = LossType::kSoftmaxCrossEntropy;
  std::size_t output_width = 0;
};

// The table the ids of sparse feed `feed` index (its owner's TableSpec).
const TableSpec& feed_table(const ModelSpec& model, const FeedSpec& feed);

// One trainable tensor the model declares.
struct ParameterSpec {
  std::string name;  // "<layer>/weight" or "<layer>/bias"
  std::vector<std::size_t> shape;
  bool row_sparse_gradient = false;  // embedding tables
  Initializer initializer = Initializer::kZeros;
  float init_scale = 0.0f;  // uniform initializer bound
  std::size_t fan_in = 0, fan_out = 0;
  std::string declared_by;  // "plan.model.layers[i]"
};

// The parameters `model` declares, in layer order (weight before bias).
std::vector<ParameterSpec> parameter_specs(const ModelSpec& model);

// The bytes of every parameter `model` declares, as F32 (a model's safetensors data section),
// saturating at UINT64_MAX: what allocating the model would take, known before allocating it.
std::uint64_t parameter_bytes(const ModelSpec& model);

// Parses and checks `plan`'s "model" object (plan is the whole plan object: paths start "plan.").
ModelSpec parse_model_spec(const nlohmann::json& plan);

}  // namespace fedleaf::core
