#include "core/model/layer_registry.h"

#include <iterator>

#include "core/error.h"
#include "core/model/activation.h"
#include "core/model/add_layer.h"
#include "core/model/concatenate.h"
#include "core/model/dense_layer.h"
#include "core/model/dropout.h"
#include "core/model/elementwise_inputs.h"
#include "core/model/embedding_bag.h"
#include "core/model/multiply_layer.h"

namespace fedleaf::core {
namespace {

// One line per layer type, in the order the unknown-type message lists them.
constexpr LayerKind kLayerKinds[] = {
    {"embedding_bag", true, false, kEmbeddingBagFields, kEmbeddingBagChoices,
     parse_embedding_bag_spec, embedding_bag_parameters, make_embedding_bag},
    {"dense", true, false, kDenseFields, kDenseChoices, parse_dense_spec, dense_parameters,
     make_dense},
    {"relu", false, false, kActivationFields, kNoChoices, parse_activation_spec, nullptr,
     make_activation},
    {"sigmoid", false, false, kActivationFields, kNoChoices, parse_activation_spec, nullptr,
     make_activation},
    {"tanh", false, false, kActivationFields, kNoChoices, parse_activation_spec, nullptr,
     make_activation},
    {"concatenate", false, true, kConcatenateFields, kNoChoices, parse_concatenate_spec, nullptr,
     make_concatenate},
    {"add", false, true, kElementwiseInputsFields, kNoChoices, parse_elementwise_inputs, nullptr,
     make_add},
    {"multiply", false, true, kElementwiseInputsFields, kNoChoices, parse_elementwise_inputs,
     nullptr, make_multiply},
    {"dropout", false, false, kDropoutFields, kNoChoices, parse_dropout_spec, nullptr,
     make_dropout},
};

}  // namespace

const LayerKind* find_layer_kind(const std::string& type) {
  for (const LayerKind& kind : kLayerKinds) {
    if (type == kind.type) return &kind;
  }
  return nullptr;
}

const LayerKind& layer_kind_named(const std::string& type, const std::string& path) {
  if (const LayerKind* kind = find_layer_kind(type)) return *kind;
  const std::size_t n = std::size(kLayerKinds);
  std::string expected;
  for (std::size_t k = 0; k < n; ++k) {
    expected += (k == 0 ? "" : k + 1 == n ? " or " : ", ") + std::string(kLayerKinds[k].type);
  }
  throw InvalidInput(path + ": unknown layer type '" + type + "' (expected " + expected + ")");
}

std::vector<const LayerKind*> layer_kinds() {
  std::vector<const LayerKind*> out;
  for (const LayerKind& kind : kLayerKinds) out.push_back(&kind);
  return out;
}

}  // namespace fedleaf::core
