// The plan a task carries, parsed and validated: model, training settings, update encodings and
// the featurization of raw text. Parsed once per task: the entry points (execute, evaluate,
// TrainingSession, predict, initialize_model) take the Plan, and the wasm module holds it as a
// handle (wasm/plan_handle.h) that JS passes to each call.
//
//   Plan plan = parse_plan(R"({"model": {...}, "train": {...}, "updates": {...}})");
//   plan.model.layers[0].kind->type == std::string("embedding_bag");
//
// Schema (js_bindings/PLAN.md is the reference npm users read: change both together; the fields
// and choices are constants the parsers check, plan_schema.h lists them and
// tests/js/plan_types.test.mjs compares them with js_bindings/index.d.ts). A field not listed is
// an error naming it and the fields of its object (a typo such as "learning_rte" would otherwise
// train with the default on every leaf); so is a key given twice.
// The top level also takes "max_examples_per_report" (read by
// core/aggregation/updates/update_plan.h).
//
// {"format_version": N >= 1,                            optional, default (and at most) this
//                                                        build's kPlanFormatVersion (plan_format.h)
//  "kind": "train" | "evaluate",                         default "train"
//  "model": {                                            a graph of layers (Keras functional style)
//    "inputs": {"<name>": "sparse_ids"                   one or more named inputs: CSR ids
//                       | {"type": "sparse_ids", "features": {...}}       (+weights)
//                       | {"type": "dense", "dim": N, "features": {...}}} or dense float rows
//            ("features": how records become this input, parsed by core/features/
//            (input_features.h) into Plan::input_features, and kept as JSON text in
//            InputSpec::features_json; a sparse input's num_buckets / hash_buckets must be <= the
//            vocab of every table it feeds)
//    "layers": [                                         listed in a topological order; the model
//                                                        section is parsed by core/model/
//                                                        model_spec.h, each type's fields by its
//                                                        entry of the layer table
//                                                        (layer_registry.h)
//      every layer: "input": <name> (one) or "inputs": [<name>, ...] (concatenate, add,
//        multiply): an
//        input name or an EARLIER layer's name (inputs and layers share one namespace; a later
//        layer or the layer itself is a cycle). Neither given: the previous layer's output; for
//        the first layer the only input (an error when there are several). So a one-input chain
//        plan means what it always meant.
//      {"type": "embedding_bag", "name": S, "vocab": N, "dim": N,
//       "combiner": "sum" | "mean" | "sqrtn" (default "mean"),
//       "initializer": "uniform" (default) | "zeros",
//       "init_scale": F (default 0.05: uniform in [-0.05, 0.05]),
//       "use_bias": false (default) | true}
//         → parameter S/weight [vocab, dim], and with use_bias S/bias [dim] (zeros; a dense
//         gradient: list it in "updates" as "dense"). Reads a sparse_ids input (any position).
//         out[b] = c_b · Σ_j w_j E[id_j] (+ bias) with c_b = 1 (sum), 1/Σ|w_j| (mean),
//         1/sqrt(Σ w_j²) (sqrtn); 0 (+ bias) for an example without ids. For weights >= 0 these
//         are TensorFlow's. Combiner sum with use_bias is a Keras Dense on a sparse input
//         (x W + b with W = E, the ids and weights x's nonzero columns and values).
//       or {"type": "embedding_bag", "name": S, "table": <earlier embedding_bag owning a table>,
//           "combiner": ..., "vocab"/"dim" optional and then equal to the table's}
//         → a second lookup of that table: no parameter of its own, its gradient is summed into
//         the table's; "use_bias" is refused (a bias would be a parameter of its own).
//      {"type": "dense", "name": S, "units": N, "activation": "relu"|"sigmoid"|"tanh" (optional),
//       "use_bias": true (default), "initializer": "glorot_uniform" (default) | "zeros"}
//         → S/weight [in, units], S/bias [units]; y = x W + b.
//      {"type": "relu" | "sigmoid" | "tanh", "name": S (optional)}
//      {"type": "concatenate", "name": S, "inputs": [>= 2 names]}   width = sum, in list order
//      {"type": "add", "name": S, "inputs": [>= 2 names of equal width]}
//      {"type": "multiply", "name": S, "inputs": [>= 2 names of equal width]}   the elementwise
//         product, in list order (Keras's Multiply)
//      {"type": "dropout", "name": S (optional), "rate": F in [0, 1), "seed": N (default 0)}
//         training only (identity in evaluation and prediction): inverted dropout, kept units
//         scaled by 1/(1-rate), the mask a counter-based hash of (seed, step, example position
//         in the batch, unit): the same on every platform (dropout.h).
//    ],
//    "output": <layer name> (default: the last layer). Every input and every layer must reach
//              the output ("unused input" / "unused layer" errors), so it is the last layer.
//    "loss": "softmax_cross_entropy" (labels are class ids < output width >= 2)
//          | "sigmoid_cross_entropy" (output width 1, labels 0/1)
//          | "mean_squared_error" (float targets, one per output unit; loss per example
//            Σ_u (y_u - t_u)² / units, Keras' mean over the last axis; accuracy is reported 0)},
//  "train": {                                            required for kind "train" (not for
//                                                        inference: PlanUse::kInference)
//    "optimizer": {"type": "sgd" | "momentum" | "adam", "learning_rate": F > 0,
//                  "momentum": F in [0, 1) (momentum; default 0.9),
//                  "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-7 (adam),
//                  "epsilon_form": "keras" (default) | "tfjs" (adam: where ε sits, parsed
//                  with the rest of the object by optimizer.h, which gives both rules:
//                  keras lr·sqrt(1-β2^t)/(1-β1^t)·m/(sqrt(v)+ε), Keras (Python)'s;
//                  tfjs lr·m̂/(sqrt(v̂)+ε), TF.js's)},
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
//                           "clip": ..., "row_clip": ..., "min_contributors": ... (robust rules),
//                           "compression": {"values": "f32" | "f16" | "int8",
//                                           "ids": "i64" | "u32" | "delta_varint"} (the upload),
//                           "download_values": "f32" | "f16" (model:select answers)}},
//                                                        required (non-empty) for kind "train"
//                                                        (not for inference);
//                                                        each <tensor> a parameter of the model;
//                                                        parsed by
//                                                        core/aggregation/updates/update_plan.h,
//                                                        which gives the meaning of each field
//  "features": {"hash": "murmur3_32", "num_buckets": N, "ngrams": N, "signed": bool,
//               "lowercase": bool, "binary": bool, "skip_headers": bool,
//               "min_token_length": N, "max_token_length": N, "seed": N}   optional, see
//                                                        text_features.h for meaning and defaults;
//                                                        a one-input text plan's: its only input
//                                                        reads the record field "text" with them
//                                                        (rewritten into Plan::input_features by
//                                                        input_features.h)
//  "eval": {"batch_size": N}                             optional, default 256 (kind "evaluate")
//  "tfjs": {...}                                         optional: what importTfjsLayersModel
//                                                        keeps of the Keras model a plan came
//                                                        from so exportTfjsLayersModel gives it
//                                                        back (js_bindings/src/interop/
//                                                        tfjs_plan_origin.js); not read here
// }
//
// Every error is InvalidInput naming the JSON path and the rule, e.g.
// "plan.model.layers[1].units: missing".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/aggregation/updates/update_plan.h"
#include "core/data/input_columns.h"
#include "core/features/input_features.h"
#include "core/features/text_features.h"
#include "core/model/model_spec.h"
#include "core/train/plan_tables.h"

namespace fedleaf::core {

enum class OptimizerType { kSgd, kMomentum, kAdam };
// Where Adam's ε sits (optimizer.h has both rules): inside the bias correction (Keras in Python,
// TensorFlow) or outside it (TF.js).
enum class AdamEpsilonForm { kKeras, kTfjs };
enum class PlanKind { kTrain, kEvaluate };

// The fields of the plan's own objects and the names of its choices (the model section's are in
// core/model/model_spec.h, the layers' in their files, the updates' in
// core/aggregation/updates/update_plan.h, the features' in text_features.h and
// core/features/input_features.h): what parse_plan checks, and what plan_schema lists.
inline constexpr std::array kPlanFields{
    "format_version",          "kind", "model", "train", "updates", "features", "eval",
    "max_examples_per_report", "tfjs"};
inline constexpr std::array kPlanKinds{std::pair{"train", PlanKind::kTrain},
                                       std::pair{"evaluate", PlanKind::kEvaluate}};
inline constexpr std::array kTrainFields{"optimizer", "epochs",       "batch_size",
                                         "shuffle",   "shuffle_seed", "clip_norm"};
inline constexpr std::array kOptimizerFields{"type",  "learning_rate", "momentum",    "beta1",
                                             "beta2", "epsilon",       "epsilon_form"};
inline constexpr std::array kOptimizerTypes{std::pair{"sgd", OptimizerType::kSgd},
                                            std::pair{"momentum", OptimizerType::kMomentum},
                                            std::pair{"adam", OptimizerType::kAdam}};
inline constexpr std::array kAdamEpsilonForms{std::pair{"keras", AdamEpsilonForm::kKeras},
                                              std::pair{"tfjs", AdamEpsilonForm::kTfjs}};
inline constexpr std::array kEvalFields{"batch_size"};

struct OptimizerSpec {
  OptimizerType type = OptimizerType::kSgd;
  float learning_rate = 0.01f;
  float momentum = 0.9f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-7f;
  AdamEpsilonForm epsilon_form = AdamEpsilonForm::kKeras;
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
  // Each input's "features" (model.inputs.<name>.features), in the order of the inputs' names,
  // parsed once: what featurize_records (core/features/featurize_records.h) takes. A one-input
  // text plan's: its unnamed text input reading the record field "text" (input_features.h).
  std::vector<InputFeatures> input_features;
  std::size_t eval_batch_size = 256;
  // The model's embedding tables with their owners, lookups and inputs (plan_tables.h), worked
  // out once here for every reader.
  std::vector<PlanTable> tables;
};

// What the plan is parsed for. kTask: a task a leaf runs (kind "train" needs "train" and
// "updates"). kInference: predict(), which needs only the model: "train" and "updates" may be
// absent whatever the kind (they are still checked when given).
enum class PlanUse { kTask, kInference };

Plan parse_plan(const std::string& plan_json, PlanUse use = PlanUse::kTask);

// The plan's "features" section (defaults of TextFeatureOptions when absent): how the leaf, the
// server and the eval featurize raw text for this plan.
TextFeatureOptions text_features_from_plan(const std::string& plan_json);

}  // namespace fedleaf::core
