#include "core/model/model_spec.h"

#include <algorithm>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/model/layer_registry.h"

namespace fedleaf::core {
namespace {

using namespace plan_json;

void parse_inputs(const json& model, ModelSpec& spec) {
  const json& inputs = require_object(model, "plan.model", "inputs");
  if (inputs.empty()) fail("plan.model.inputs", "expected at least one input");
  for (auto it = inputs.begin(); it != inputs.end(); ++it) {
    InputSpec input;
    input.name = it.key();
    input.path = "plan.model.inputs." + it.key();
    const std::string& path = input.path;
    if (input.name.empty()) fail(path, "an input name must not be empty");
    std::string type;
    if (it->is_string()) {
      type = it->get<std::string>();
    } else if (it->is_object()) {
      check_known_fields(*it, path, kInputFields);
      type = get_string(*it, path, "type");
      if (const json* features = find_field(*it, "features")) {
        if (!features->is_object()) fail(path + ".features", "expected an object");
        input.features_json = features->dump();
      }
    } else {
      fail(path, "expected \"sparse_ids\" or an object {\"type\": ..., \"dim\": ...}");
    }
    const auto kind = std::find_if(kInputKinds.begin(), kInputKinds.end(),
                                   [&](const auto& k) { return type == k.first; });
    if (kind == kInputKinds.end()) {
      fail(path, "unknown input type '" + type + "' (expected sparse_ids or dense)");
    }
    input.kind = kind->second;
    if (input.kind == InputKind::kDense) {
      if (!it->is_object())
        fail(path + ".dim", "missing (a dense input is {\"type\": \"dense\", \"dim\": N})");
      input.dim = get_size(*it, path, "dim", std::nullopt, 1);
    }
    spec.inputs.push_back(std::move(input));
  }
}

// The names a layer may read while the layer list is parsed: every input, then each layer as it
// is parsed (a plan entry's name stands for its last expanded layer: a dense layer's activation).
class GraphNames {
 public:
  GraphNames(const json& layers, const ModelSpec& spec) : layers_(layers) {
    for (std::size_t i = 0; i < spec.inputs.size(); ++i) {
      known_.emplace(spec.inputs[i].name, NodeRef{true, i});
    }
  }

  // The node `name` (read by plan entry `entry`, at `path`) stands for.
  NodeRef resolve(const json& name, std::size_t entry, const std::string& path) const {
    if (!name.is_string()) fail(path, "expected the name of an input or a layer");
    const std::string n = name.get<std::string>();
    const auto it = known_.find(n);
    if (it != known_.end()) return it->second;
    for (std::size_t k = entry; k < layers_.size(); ++k) {
      const json* other = layers_[k].is_object() ? find_field(layers_[k], "name") : nullptr;
      if (other != nullptr && other->is_string() && other->get<std::string>() == n) {
        fail(path, k == entry
                       ? "'" + n + "' is this layer itself (a cycle)"
                       : "'" + n + "' is defined later (layers are listed in order; a cycle?)");
      }
    }
    fail(path, "unknown input or layer '" + n + "'");
  }

  // Registers layer `index` under `name`; a name given twice is an error at `path`.
  void add(const std::string& name, std::size_t index, const std::string& path) {
    const auto [it, added] = known_.emplace(name, NodeRef{false, index});
    if (added) return;
    if (it->second.is_input) {
      fail(path, "'" + name + "' is also an input's name (inputs and layers share one namespace)");
    }
    fail(path, "duplicate layer name '" + name + "'");
  }

  // The node plan entry `entry` reads when it names none.
  NodeRef default_source(std::size_t entry, const ModelSpec& spec, const std::string& path) const {
    if (entry > 0) return NodeRef{false, spec.layers.size() - 1};
    if (spec.inputs.size() == 1) return NodeRef{true, 0};
    std::string names;
    for (const InputSpec& i : spec.inputs) names += (names.empty() ? "" : ", ") + i.name;
    fail(path + ".input",
         "missing: the model has several inputs (" + names + "), name the one this layer reads");
  }

 private:
  const json& layers_;
  std::map<std::string, NodeRef> known_;
};

LayerSource describe(const ModelSpec& spec, const NodeRef& ref, const std::string& name) {
  LayerSource s;
  s.name = name;
  s.is_input = ref.is_input;
  if (ref.is_input) {
    s.kind = spec.inputs[ref.index].kind;
    s.width = spec.inputs[ref.index].dim;
  } else {
    s.kind = InputKind::kDense;
    s.width = spec.layers[ref.index].output_width;
  }
  return s;
}

std::string node_name(const ModelSpec& spec, const NodeRef& ref) {
  if (ref.is_input) return spec.inputs[ref.index].name;
  const LayerSpec& l = spec.layers[ref.index];
  return l.name.empty() ? l.path : l.name;
}

// The kinds reading "inputs", as the layer table lists them ("a, b and c").
std::string several_input_kinds() {
  std::vector<std::string> kinds;
  for (const LayerKind* kind : layer_kinds()) {
    if (kind->several_inputs) kinds.emplace_back(kind->type);
  }
  std::string out;
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    out += (k == 0 ? "" : k + 1 == kinds.size() ? " and " : ", ") + kinds[k];
  }
  return out;
}

// The sources of plan entry `entry`: "input", "inputs" or the default.
std::vector<NodeRef> parse_sources(const json& l, const LayerKind& kind, std::size_t entry,
                                   const GraphNames& names, const ModelSpec& spec,
                                   const std::string& path) {
  const json* input = find_field(l, "input");
  const json* inputs = find_field(l, "inputs");
  if (input != nullptr && inputs != nullptr) {
    fail(path, "give \"input\" or \"inputs\", not both");
  }
  if (inputs != nullptr) {
    if (!kind.several_inputs) {
      fail(path + ".inputs", std::string(kind.type) + " reads one \"input\" (only " +
                                 several_input_kinds() + " read several)");
    }
    if (!inputs->is_array()) fail(path + ".inputs", "expected an array of names");
    std::vector<NodeRef> out;
    for (std::size_t k = 0; k < inputs->size(); ++k) {
      out.push_back(
          names.resolve((*inputs)[k], entry, path + ".inputs[" + std::to_string(k) + "]"));
    }
    return out;
  }
  if (input != nullptr) return {names.resolve(*input, entry, path + ".input")};
  return {names.default_source(entry, spec, path)};
}

void parse_layers(const json& model, ModelSpec& spec) {
  const json& layers = require(model, "plan.model", "layers");
  if (!layers.is_array() || layers.empty()) {
    fail("plan.model.layers", "expected a non-empty array");
  }
  GraphNames names(layers, spec);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const json& l = layers[i];
    const std::string path = "plan.model.layers[" + std::to_string(i) + "]";
    if (!l.is_object()) fail(path, "expected an object");
    LayerSpec layer;
    layer.path = path;
    const std::string type = get_string(l, path, "type");
    const json* name = find_field(l, "name");
    if (name != nullptr && (!name->is_string() || name->get<std::string>().empty())) {
      fail(path + ".name", "expected a non-empty string");
    }
    if (name != nullptr) layer.name = name->get<std::string>();
    const LayerKind& kind = layer_kind_named(type, path + ".type");
    layer.kind = &kind;
    layer.sources = parse_sources(l, kind, i, names, spec, path);
    LayerInput input;
    input.index = i;
    for (const NodeRef& ref : layer.sources) {
      input.sources.push_back(describe(spec, ref, node_name(spec, ref)));
    }
    const std::size_t first = spec.layers.size();
    kind.parse(l, input, std::move(layer), spec.layers);
    const std::string& layer_name = spec.layers[first].name;
    if (kind.has_parameters && layer_name.empty()) fail(path + ".name", "missing");
    if (!layer_name.empty()) names.add(layer_name, spec.layers.size() - 1, path + ".name");
  }
  if (const json* output = find_field(model, "output")) {
    const NodeRef ref = names.resolve(*output, layers.size(), "plan.model.output");
    if (ref.is_input) fail("plan.model.output", "expected a layer's name, got an input's");
    // Layers are in order and each must reach the output: a layer after it is an unused layer.
    for (std::size_t k = ref.index + 1; k < spec.layers.size(); ++k) {
      const LayerSpec& later = spec.layers[k];
      const std::string entry = later.path.substr(0, later.path.find(".activation"));
      fail(entry, "unused layer '" + node_name(spec, NodeRef{false, k}) + "' (after the output '" +
                      output->get<std::string>() + "')");
    }
  }
  spec.output_width = spec.layers.back().output_width;
}

// Every layer and input must reach the output (the last layer); numbers the feeds.
void check_graph(ModelSpec& spec) {
  std::vector<bool> used(spec.layers.size(), false);
  std::vector<bool> input_used(spec.inputs.size(), false);
  used.back() = true;
  for (std::size_t i = spec.layers.size(); i-- > 0;) {
    const LayerSpec& l = spec.layers[i];
    if (!used[i]) {
      const std::string entry = l.path.substr(0, l.path.find(".activation"));
      fail(entry, "unused layer '" + node_name(spec, NodeRef{false, i}) +
                      "' (its output reaches no layer on the way to the output)");
    }
    for (const NodeRef& s : l.sources) (s.is_input ? input_used : used)[s.index] = true;
  }
  for (std::size_t k = 0; k < spec.inputs.size(); ++k) {
    if (!input_used[k]) fail(spec.inputs[k].path, "unused input (no layer reads it)");
  }
  for (LayerSpec& l : spec.layers) {
    for (const NodeRef& s : l.sources) {
      if (!s.is_input) continue;
      const bool sparse = spec.inputs[s.index].kind == InputKind::kSparseIds;
      std::size_t f = 0;
      while (f < spec.feeds.size() && !(spec.feeds[f].input == s.index &&
                                        (!sparse || spec.feeds[f].table_layer == l.table_layer))) {
        ++f;
      }
      if (f == spec.feeds.size()) spec.feeds.push_back(FeedSpec{s.index, sparse, l.table_layer});
      if (sparse) l.feed = f;
      if (!sparse) spec.inputs[s.index].feed = f;
    }
  }
}

}  // namespace

ModelSpec parse_model_spec(const json& plan) {
  const json& model = require_object(plan, "plan", "model");
  check_known_fields(model, "plan.model", kModelFields);
  ModelSpec spec;
  parse_inputs(model, spec);
  parse_layers(model, spec);
  check_graph(spec);
  spec.loss = get_choice(model, "plan.model", "loss", nullptr, "loss", kLosses);
  if (spec.loss == LossType::kSoftmaxCrossEntropy && spec.output_width < 2) {
    fail("plan.model.loss", "softmax_cross_entropy needs an output width >= 2, the model's is " +
                                std::to_string(spec.output_width));
  }
  if (spec.loss == LossType::kSigmoidCrossEntropy && spec.output_width != 1) {
    fail("plan.model.loss", "sigmoid_cross_entropy needs an output width of 1, the model's is " +
                                std::to_string(spec.output_width));
  }
  return spec;
}

void throw_wrong_layer_config(const LayerSpec& spec) {
  throw InvalidInput(spec.path + ": the layer's config is not its kind's");
}

const TableSpec& feed_table(const ModelSpec& model, const FeedSpec& feed) {
  return *model.layers[feed.table_layer].owned_table;
}

std::vector<ParameterSpec> parameter_specs(const ModelSpec& model) {
  std::vector<ParameterSpec> out;
  for (const LayerSpec& l : model.layers) {
    if (l.kind->parameters != nullptr) l.kind->parameters(l, out);
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

}  // namespace fedleaf::core
