// What one layer type contributes to a model, as an entry of the explicit layer table
// (layer_registry.cc): its fields and choices (which the plan's schema lists, plan_schema.h), its
// spec parsing, its parameters and its op (layer_op.h: its forward and backward passes, which the
// graph walk calls without naming the type). The layer's own file
// (embedding_bag.cc, dense_layer.cc, activation.cc, concatenate.cc, add_layer.cc,
// multiply_layer.cc, dropout.cc; add and multiply share elementwise_inputs.cc) holds these next to
// each other; CONTRIBUTING.md's "Adding a layer" lists what else a new type touches.
//
//   const LayerKind* kind = find_layer_kind("dense");
//   kind->parse(object, LayerInput{i, {{"h1", false, InputKind::kDense, 16}}}, spec, layers);
//   kind->parameters(layers.back(), params);
//   kind->make(layers.back(), binder, max_batch_size, model_layer);   // model_layer.op set
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/json/json_known_fields.h"
#include "core/model/model_spec.h"
#include "core/tensor/dense_tensor.h"

namespace fedleaf::core {

struct ModelLayer;

// One thing a layer reads, as the plan resolved its name.
struct LayerSource {
  std::string name;
  bool is_input = false;               // a model input (else an earlier layer's output)
  InputKind kind = InputKind::kDense;  // kSparseIds: a sparse_ids input; kDense: float rows
  std::size_t width = 0;               // float rows' width (0 for sparse ids)
};

// Where a layer sits: its index in the plan's layer list and what it reads ("input": one source;
// "inputs": several, for the kinds that take them).
struct LayerInput {
  std::size_t index = 0;
  std::vector<LayerSource> sources;
};

// Hands a layer being built its declared tensors, in the order its `parameters` declares them,
// and registers a gradient for each; virtual because only model.cc knows the parameters and the
// gradients, and called once per parameter at construction, never while training.
class ParameterBinder {
 public:
  struct Bound {
    DenseTensor* tensor;
    int gradient;  // index into Model::gradients()
  };
  virtual ~ParameterBinder() = default;
  // Throws InvalidInput naming the tensor and its layer when it is missing or misshapen.
  virtual Bound next() = 0;
  // A tensor an earlier next() handed out, by parameter name (a shared embedding table's second
  // lookup); throws InvalidInput when none was.
  virtual Bound bound(const std::string& parameter_name) = 0;
};

// A field of a layer that names one of a set, and the names `parse` accepts there
// (choice_names_of the {name, value} pairs it reads the field with).
struct LayerChoice {
  const char* field;
  FieldList names;
};

// A view of a kind's choice fields, held by a constant std::array (empty: a kind without any).
class LayerChoices {
 public:
  constexpr LayerChoices() = default;
  template <std::size_t N>
  constexpr LayerChoices(
      const std::array<LayerChoice, N>& choices)  // NOLINT(google-explicit-constructor)
      : begin_(choices.data()), size_(N) {}
  constexpr const LayerChoice* begin() const { return begin_; }
  constexpr const LayerChoice* end() const { return begin_ + size_; }
  constexpr std::size_t size() const { return size_; }

 private:
  const LayerChoice* begin_ = nullptr;
  std::size_t size_ = 0;
};

// The choices of a kind without any.
inline constexpr LayerChoices kNoChoices{};

struct LayerKind {
  const char* type;      // the plan's "type"
  bool has_parameters;   // then "name" is required (it prefixes the parameter names)
  bool several_inputs;   // reads "inputs" (a list); every other kind reads one "input"
  FieldList fields;      // the fields `parse` accepts (the plan's schema lists them)
  LayerChoices choices;  // those of its fields naming one of a set (the schema lists them too)
  // Reads the layer's own fields from `object` (the plan checked "type", "input"/"inputs" and
  // "name" and set spec.kind, spec.name, spec.path and spec.sources) into its own config
  // (spec.config, a LayerConfig its header derives): known fields, defaults, what it may read,
  // its input and output widths and the generic facts (spec.owned_table, spec.table_layer).
  // `layers` holds the earlier layers. Appends the layer, then any layer it expands into (a dense
  // layer's "activation"). Throws InvalidInput "<path>.<field>: <rule>".
  void (*parse)(const nlohmann::json& object, const LayerInput& input, LayerSpec spec,
                std::vector<LayerSpec>& layers);
  // Appends the parameters `spec` declares (weight before bias); null: none.
  void (*parameters)(const LayerSpec& spec, std::vector<ParameterSpec>& out);
  // Sets `layer.op`, the layer's forward and backward (layer_op.h), over the tensors `binder`
  // hands out (and layer's gradient indices); its buffers for up to `max_batch_size` examples.
  void (*make)(const LayerSpec& spec, ParameterBinder& binder, std::size_t max_batch_size,
               ModelLayer& layer);
};

}  // namespace fedleaf::core
