// The explicit table of layer types a plan may name (no self-registration: src/core keeps no
// globals). Adding a layer type: its file defines a LayerKind's functions, and one line in
// layer_registry.cc lists it (CONTRIBUTING.md, "Adding a layer").
//
//   const LayerKind& kind = layer_kind_named(type, "plan.model.layers[0].type");
#pragma once

#include <string>
#include <vector>

#include "core/model/layer_kind.h"

namespace fedleaf::core {

// The kind whose "type" is `type`, or nullptr.
const LayerKind* find_layer_kind(const std::string& type);

// find_layer_kind, or InvalidInput "<path>: unknown layer type '<type>' (expected <every type>)".
const LayerKind& layer_kind_named(const std::string& type, const std::string& path);

// Every kind, in table order.
std::vector<const LayerKind*> layer_kinds();

}  // namespace fedleaf::core
