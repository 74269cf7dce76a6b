// The plan a task carries, parsed and validated: model, training settings, update encodings and
// the featurization of raw text.
//
//   Plan plan = parse_plan(R"({"model": {...}, "train": {...}, "updates": {...}})");
//   plan.model.layers[0].type == LayerType::kEmbeddingBag;
//
// Schema. A field not listed is an error naming it and the fields of its object (a typo such as
// "learning_rte" would otherwise train with the default on every leaf); so is a key given twice.
// The top level also takes "max_examples_per_report" (read by core/aggregation/update_plan.h).
//
// {"kind": "train" | "evaluate",                         default "train"
//  "model": {
//    "inputs": {"<name>": "sparse_ids"}                  exactly one input: CSR ids (+weights)
//            | {"<name>": {"type": "dense", "dim": N}}   or dense float rows of width N
//            ("sparse_ids" may also be written {"type": "sparse_ids"})
//    "layers": [                                         applied in order; each type's fields
//                                                        are parsed by its entry of the layer
//                                                        table (layer_registry.h)
//      {"type": "embedding_bag", "name": S, "vocab": N, "dim": N,
//       "combiner": "sum" | "mean" | "sqrtn" (default "mean"),
//       "input": <input name> (optional), "initializer": "uniform" (default) | "zeros",
//       "init_scale": F (default 0.05: uniform in [-0.05, 0.05])}
//         → parameter S/weight [vocab, dim]. Only as the first layer, on a sparse_ids input.
//         out[b] = c_b · Σ_j w_j E[id_j] with c_b = 1 (sum), 1/Σ|w_j| (mean), 1/sqrt(Σ w_j²)
//         (sqrtn); 0 for an example without ids. For weights >= 0 these are TensorFlow's.
//      {"type": "dense", "name": S, "units": N, "activation": "relu"|"sigmoid"|"tanh" (optional),
//       "use_bias": true (default), "initializer": "glorot_uniform" (default) | "zeros"}
//         → S/weight [in, units], S/bias [units]; y = x W + b.
//      {"type": "relu" | "sigmoid" | "tanh", "name": S (optional)}
//    ],
//    "loss": "softmax_cross_entropy" (labels are class ids < output width >= 2)
//          | "sigmoid_cross_entropy" (output width 1, labels 0/1)},
//  "train": {                                            required for kind "train" (not for
//                                                        inference: PlanUse::kInference)
//    "optimizer": {"type": "sgd" | "momentum" | "adam", "learning_rate": F > 0,
//                  "momentum": F in [0, 1) (momentum; default 0.9),
//                  "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7 (adam)},
//    "epochs": N >= 1 (default 1), "batch_size": N >= 1 (default 32),
//    "shuffle": true (default), "shuffle_seed": N (default 0),
//    "clip_norm": F > 0 (optional: global L2 norm clipping of each batch's gradient)},
//  "updates": {"<tensor>": {"encoding": "dense" | "row_sparse" | "coo",
//                           "aggregator": "sum" | "weighted_mean" | "mean_over_contributors"
//                                       | "count" | "clipped_weighted_mean",
//                           "clip_norm": F > 0 (clipped_weighted_mean),
//                           "download": "full" | "select" (select: row_sparse only; default
//                                       select for row_sparse, full otherwise),
//                           "max_select_rows": N >= 1 (select; absent = no cap),
//                           "select_padding": {"multiple": N} | {"count": N} (select),
//                           "compression": {"values": "f32" | "f16" | "int8",
//                                           "ids": "i64" | "delta_varint"} (the upload),
//                           "download_values": "f32" | "f16" (model:select answers)}},
//                                                        required (non-empty) for kind "train"
//                                                        (not for inference);
//                                                        each <tensor> a parameter of the model;
//                                                        parsed by core/aggregation/update_plan.h,
//                                                        which gives the meaning of each field
//  "features": {"hash": "murmur3_32", "num_buckets": N, "ngrams": N, "signed": bool,
//               "lowercase": bool, "binary": bool, "skip_headers": bool,
//               "min_token_length": N, "max_token_length": N, "seed": N}   optional, see
//                                                        text_features.h for meaning and defaults
//  "eval": {"batch_size": N}                             optional, default 256 (kind "evaluate")
// }
//
// Every error is InvalidInput naming the JSON path and the rule, e.g.
// "plan.model.layers[1].units: missing".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/aggregation/update_plan.h"
#include "core/train/input_columns.h"
#include "core/train/text_features.h"

namespace fedleaf::core {

enum class LayerType { kEmbeddingBag, kDense, kRelu, kSigmoid, kTanh };
enum class Combiner { kSum, kMean, kSqrtn };
enum class Initializer { kUniform, kGlorotUniform, kZeros };
enum class LossType { kSoftmaxCrossEntropy, kSigmoidCrossEntropy };
enum class OptimizerType { kSgd, kMomentum, kAdam };
enum class PlanKind { kTrain, kEvaluate };

struct LayerSpec {
  LayerType type = LayerType::kDense;
  std::string name;       // empty for unnamed activation layers
  std::string path;       // "plan.model.layers[i]", for error messages
  std::size_t vocab = 0;  // embedding_bag
  std::size_t dim = 0;    // embedding_bag
  Combiner combiner = Combiner::kMean;
  std::size_t units = 0;  // dense
  bool use_bias = true;   // dense
  Initializer initializer = Initializer::kGlorotUniform;
  float init_scale = 0.05f;
  std::size_t input_width = 0;   // derived: width of the layer's input
  std::size_t output_width = 0;  // derived
};

struct ModelSpec {
  std::string input_name;
  InputKind input_kind = InputKind::kSparseIds;
  std::size_t input_dim = 0;  // dense inputs
  // Dense layers with an "activation" are expanded into a dense layer and an activation layer.
  std::vector<LayerSpec> layers;
  LossType loss = LossType::kSoftmaxCrossEntropy;
  std::size_t output_width = 0;
};

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

struct OptimizerSpec {
  OptimizerType type = OptimizerType::kSgd;
  float learning_rate = 0.01f;
  float momentum = 0.9f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-7f;
};

struct TrainSpec {
  OptimizerSpec optimizer;
  std::size_t epochs = 1;
  std::size_t batch_size = 32;
  bool shuffle = true;
  std::uint64_t shuffle_seed = 0;
  float clip_norm = 0.0f;  // 0: no clipping
};

struct Plan {
  PlanKind kind = PlanKind::kTrain;
  ModelSpec model;
  std::optional<TrainSpec> train;
  UpdatePlan updates;  // entries name parameters of `model`
  std::optional<TextFeatureOptions> features;
  std::size_t eval_batch_size = 256;
};

// What the plan is parsed for. kTask: a task a leaf runs (kind "train" needs "train" and
// "updates"). kInference: predict(), which needs only the model: "train" and "updates" may be
// absent whatever the kind (they are still checked when given).
enum class PlanUse { kTask, kInference };

Plan parse_plan(const std::string& plan_json, PlanUse use = PlanUse::kTask);

// The parameters `model` declares, in layer order (weight before bias).
std::vector<ParameterSpec> parameter_specs(const ModelSpec& model);

// The bytes of every parameter `model` declares, as F32 (a model's safetensors data section),
// saturating at UINT64_MAX: what allocating the model would take, known before allocating it.
std::uint64_t parameter_bytes(const ModelSpec& model);

// The plan's "features" section (defaults of TextFeatureOptions when absent): how the leaf, the
// server and the eval featurize raw text for this plan.
TextFeatureOptions text_features_from_plan(const std::string& plan_json);

}  // namespace fedleaf::core
