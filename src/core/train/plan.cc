#include "core/train/plan.h"

#include <algorithm>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/train/layer_registry.h"

namespace fedleaf::core {
namespace {

using namespace plan_json;

const json& require(const json& object, const std::string& path, const char* key) {
  const json* v = find_field(object, key);
  if (v == nullptr) fail(path + "." + key, "missing");
  return *v;
}

const json& require_object(const json& object, const std::string& path, const char* key) {
  const json& v = require(object, path, key);
  if (!v.is_object()) fail(path + "." + key, "expected an object");
  return v;
}

void parse_inputs(const json& model, ModelSpec& spec) {
  const json& inputs = require_object(model, "plan.model", "inputs");
  if (inputs.size() != 1) fail("plan.model.inputs", "expected exactly one input");
  const auto it = inputs.begin();
  spec.input_name = it.key();
  const std::string path = "plan.model.inputs." + it.key();
  std::string type;
  if (it->is_string()) {
    type = it->get<std::string>();
  } else if (it->is_object()) {
    check_known_fields(*it, path, {"type", "dim"});
    type = get_string(*it, path, "type");
  } else {
    fail(path, "expected \"sparse_ids\" or an object {\"type\": ..., \"dim\": ...}");
  }
  if (type == "sparse_ids") {
    spec.input_kind = InputKind::kSparseIds;
  } else if (type == "dense") {
    spec.input_kind = InputKind::kDense;
    if (!it->is_object())
      fail(path + ".dim", "missing (a dense input is {\"type\": \"dense\", \"dim\": N})");
    spec.input_dim = get_size(*it, path, "dim", std::nullopt, 1);
  } else {
    fail(path, "unknown input type '" + type + "' (expected sparse_ids or dense)");
  }
}

void parse_layers(const json& model, ModelSpec& spec) {
  const json& layers = require(model, "plan.model", "layers");
  if (!layers.is_array() || layers.empty()) {
    fail("plan.model.layers", "expected a non-empty array");
  }
  std::set<std::string> names;
  std::size_t width = spec.input_kind == InputKind::kDense ? spec.input_dim : 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const json& l = layers[i];
    const std::string path = "plan.model.layers[" + std::to_string(i) + "]";
    if (!l.is_object()) fail(path, "expected an object");
    LayerSpec layer;
    layer.path = path;
    const std::string type = get_string(l, path, "type");
    if (const json* input = find_field(l, "input")) {
      const std::string expected = i == 0 ? spec.input_name : spec.layers.back().name;
      if (!input->is_string() || input->get<std::string>() != expected) {
        fail(path + ".input", "layers are sequential: expected \"" + expected + "\"");
      }
    }
    const json* name = find_field(l, "name");
    if (name != nullptr && (!name->is_string() || name->get<std::string>().empty())) {
      fail(path + ".name", "expected a non-empty string");
    }
    if (name != nullptr) layer.name = name->get<std::string>();
    const LayerKind& kind = layer_kind_named(type, path + ".type");
    layer.type = kind.layer_type;
    const std::size_t first = spec.layers.size();
    kind.parse(l, LayerInput{i, spec.input_kind, width}, std::move(layer), spec.layers);
    const std::string& layer_name = spec.layers[first].name;
    if (kind.has_parameters && layer_name.empty()) fail(path + ".name", "missing");
    if (!layer_name.empty() && !names.insert(layer_name).second) {
      fail(path + ".name", "duplicate layer name '" + layer_name + "'");
    }
    width = spec.layers.back().output_width;
  }
  spec.output_width = width;
}

ModelSpec parse_model(const json& plan) {
  const json& model = require_object(plan, "plan", "model");
  check_known_fields(model, "plan.model", {"inputs", "layers", "loss"});
  ModelSpec spec;
  parse_inputs(model, spec);
  parse_layers(model, spec);
  const std::string loss = get_string(model, "plan.model", "loss");
  if (loss == "softmax_cross_entropy") {
    spec.loss = LossType::kSoftmaxCrossEntropy;
    if (spec.output_width < 2) {
      fail("plan.model.loss", "softmax_cross_entropy needs an output width >= 2, the model's is " +
                                  std::to_string(spec.output_width));
    }
  } else if (loss == "sigmoid_cross_entropy") {
    spec.loss = LossType::kSigmoidCrossEntropy;
    if (spec.output_width != 1) {
      fail("plan.model.loss", "sigmoid_cross_entropy needs an output width of 1, the model's is " +
                                  std::to_string(spec.output_width));
    }
  } else {
    fail("plan.model.loss",
         "unknown loss '" + loss + "' (expected softmax_cross_entropy or sigmoid_cross_entropy)");
  }
  return spec;
}

TrainSpec parse_train(const json& train) {
  const std::string path = "plan.train";
  TrainSpec spec;
  check_known_fields(train, path,
                     {"optimizer", "epochs", "batch_size", "shuffle", "shuffle_seed", "clip_norm"});
  const json& opt = require_object(train, path, "optimizer");
  const std::string opath = path + ".optimizer";
  check_known_fields(opt, opath,
                     {"type", "learning_rate", "momentum", "beta1", "beta2", "epsilon"});
  spec.optimizer.type = get_choice<OptimizerType>(opt, opath, "type", nullptr, "optimizer",
                                                  {{"sgd", OptimizerType::kSgd},
                                                   {"momentum", OptimizerType::kMomentum},
                                                   {"adam", OptimizerType::kAdam}});
  const auto positive = [](double d) { return d > 0; };
  const auto unit = [](double d) { return d >= 0 && d < 1; };
  spec.optimizer.learning_rate =
      get_float(opt, opath, "learning_rate", std::nullopt, "> 0", positive);
  spec.optimizer.momentum = get_float(opt, opath, "momentum", 0.9f, "in [0, 1)", unit);
  spec.optimizer.beta1 = get_float(opt, opath, "beta1", 0.9f, "in [0, 1)", unit);
  spec.optimizer.beta2 = get_float(opt, opath, "beta2", 0.999f, "in [0, 1)", unit);
  spec.optimizer.epsilon = get_float(opt, opath, "epsilon", 1e-7f, "> 0", positive);
  spec.epochs = get_size(train, path, "epochs", 1, 1, 1000000);
  spec.batch_size = get_size(train, path, "batch_size", 32, 1, 1u << 20);
  spec.shuffle = get_bool(train, path, "shuffle", true);
  spec.shuffle_seed = get_integer(train, path, "shuffle_seed", 0, 0, ~std::uint64_t{0});
  if (find_field(train, "clip_norm") != nullptr) {
    spec.clip_norm = get_float(train, path, "clip_norm", std::nullopt, "> 0", positive);
  }
  return spec;
}

// The updates section is parsed by the aggregation library (one parser for every reader); the
// plan adds that each entry names a parameter of its model.
void check_update_names(const UpdatePlan& updates, const std::vector<ParameterSpec>& params) {
  std::string known;
  for (const ParameterSpec& p : params) known += (known.empty() ? "" : ", ") + p.name;
  for (const TensorUpdatePlan& t : updates.tensors) {
    const bool declared = std::any_of(params.begin(), params.end(),
                                      [&](const ParameterSpec& p) { return p.name == t.name; });
    if (!declared) fail(t.path, "not a parameter of the model (parameters: " + known + ")");
  }
}

TextFeatureOptions parse_features(const json& f) {
  const std::string path = "plan.features";
  check_known_fields(f, path,
                     {"hash", "num_buckets", "ngrams", "signed", "lowercase", "binary",
                      "skip_headers", "min_token_length", "max_token_length", "seed"});
  TextFeatureOptions o;
  const std::string hash = get_string(f, path, "hash", "murmur3_32");
  if (hash != "murmur3_32")
    fail(path + ".hash", "unknown hash '" + hash + "' (expected murmur3_32)");
  o.num_buckets = static_cast<std::uint32_t>(
      get_integer(f, path, "num_buckets", o.num_buckets, 1, 0x7fffffffull));
  o.ngrams = static_cast<std::uint32_t>(get_integer(f, path, "ngrams", o.ngrams, 1, 8));
  o.signed_hash = get_bool(f, path, "signed", o.signed_hash);
  o.lowercase = get_bool(f, path, "lowercase", o.lowercase);
  o.binary = get_bool(f, path, "binary", o.binary);
  o.skip_headers = get_bool(f, path, "skip_headers", o.skip_headers);
  o.min_token_length =
      static_cast<std::uint32_t>(get_integer(f, path, "min_token_length", o.min_token_length, 1));
  o.max_token_length =
      static_cast<std::uint32_t>(get_integer(f, path, "max_token_length", o.max_token_length, 1));
  o.seed = static_cast<std::uint32_t>(get_integer(f, path, "seed", o.seed, 0));
  if (o.min_token_length > o.max_token_length) {
    fail(path + ".max_token_length", "must be >= min_token_length");
  }
  return o;
}

json parse_json(const std::string& text) {
  json plan = parse_text(text);
  if (!plan.is_object()) fail("plan", "expected a JSON object");
  return plan;
}

}  // namespace

std::vector<ParameterSpec> parameter_specs(const ModelSpec& model) {
  std::vector<ParameterSpec> out;
  for (const LayerSpec& l : model.layers) {
    const LayerKind& kind = layer_kind(l.type);
    if (kind.parameters != nullptr) kind.parameters(l, out);
  }
  return out;
}

std::uint64_t parameter_bytes(const ModelSpec& model) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t total = 0;
  for (const ParameterSpec& p : parameter_specs(model)) {
    std::uint64_t bytes = sizeof(float);
    for (const std::size_t extent : p.shape) {
      bytes = extent != 0 && bytes > kMax / extent ? kMax : bytes * extent;
    }
    total = total > kMax - bytes ? kMax : total + bytes;
  }
  return total;
}

Plan parse_plan(const std::string& plan_json, PlanUse use) {
  const json plan = parse_json(plan_json);
  Plan out;
  check_known_fields(
      plan, "plan",
      {"kind", "model", "train", "updates", "features", "eval", "max_examples_per_report"});
  const std::string kind = get_string(plan, "plan", "kind", "train");
  if (kind == "train")
    out.kind = PlanKind::kTrain;
  else if (kind == "evaluate")
    out.kind = PlanKind::kEvaluate;
  else
    fail("plan.kind", "unknown kind '" + kind + "' (expected train or evaluate)");
  out.model = parse_model(plan);
  const bool trains = use == PlanUse::kTask && out.kind == PlanKind::kTrain;
  if (const json* train = find_field(plan, "train")) {
    if (!train->is_object()) fail("plan.train", "expected an object");
    out.train = parse_train(*train);
  } else if (trains) {
    fail("plan.train", "missing");
  }
  out.updates = parse_update_plan(plan);
  check_update_names(out.updates, parameter_specs(out.model));
  if (trains && out.updates.tensors.empty()) {
    fail("plan.updates", "missing (a train plan names at least one tensor to update)");
  }
  if (const json* features = find_field(plan, "features")) {
    if (!features->is_object()) fail("plan.features", "expected an object");
    out.features = parse_features(*features);
  }
  if (const json* eval = find_field(plan, "eval")) {
    if (!eval->is_object()) fail("plan.eval", "expected an object");
    check_known_fields(*eval, "plan.eval", {"batch_size"});
    out.eval_batch_size = get_size(*eval, "plan.eval", "batch_size", 256, 1, 1u << 20);
  }
  return out;
}

TextFeatureOptions text_features_from_plan(const std::string& plan_json) {
  const json plan = parse_json(plan_json);
  const json* features = find_field(plan, "features");
  if (features == nullptr) return TextFeatureOptions{};
  if (!features->is_object()) fail("plan.features", "expected an object");
  return parse_features(*features);
}

}  // namespace fedleaf::core
