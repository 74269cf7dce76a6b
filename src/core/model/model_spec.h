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
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/data/input_columns.h"

namespace fedleaf::core {

enum class LayerType {
  kEmbeddingBag,
  kDense,
  kRelu,
  kSigmoid,
  kTanh,
  kConcatenate,
  kAdd,
  kDropout
};
enum class Combiner { kSum, kMean, kSqrtn };
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

struct LayerSpec {
  LayerType type = LayerType::kDense;
  std::string name;       // empty for unnamed activation layers
  std::string path;       // "plan.model.layers[i]", for error messages
  std::size_t vocab = 0;  // embedding_bag
  std::size_t dim = 0;    // embedding_bag
  Combiner combiner = Combiner::kMean;
  std::size_t units = 0;  // dense
  bool use_bias = true;   // dense (default true); embedding_bag (parsed, default false)
  Initializer initializer = Initializer::kGlorotUniform;
  float init_scale = 0.05f;
  std::size_t input_width = 0;   // derived: width of the layer's input (concatenate: the sum)
  std::size_t output_width = 0;  // derived
  std::vector<NodeRef> sources;  // what the layer reads, in order (several: concatenate, add)
  // embedding_bag: the layer owning its table (its own index unless "table" names another), and
  // the feed (ModelSpec::feeds) its ids come from.
  std::size_t table_layer = 0;
  std::string table;  // embedding_bag: the owner's name when it shares a table, else ""
  std::size_t feed = 0;
  float rate = 0.0f;       // dropout
  std::uint64_t seed = 0;  // dropout
};

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
  // The first input (a one-input plan's only one): its name, kind and dense dim.
  std::string input_name;
  InputKind input_kind = InputKind::kSparseIds;
  std::size_t input_dim = 0;
  // Dense layers with an "activation" are expanded into a dense layer and an activation layer.
  // Topologically ordered; the last is the output.
  std::vector<LayerSpec> layers;
  std::vector<FeedSpec> feeds;  // in the order layers first read them
  LossType loss = LossType::kSoftmaxCrossEntropy;
  std::size_t output_width = 0;
};

// The parameter name of the table embedding_bag layer `layer` looks up: "<owner>/weight".
std::string table_parameter(const ModelSpec& model, const LayerSpec& layer);

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
