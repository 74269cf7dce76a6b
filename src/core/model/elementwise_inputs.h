// The spec of a layer combining its inputs elementwise (add, multiply): two or more float rows of
// one width, read through "inputs"; its output has that width. Both kinds' table entries parse
// with it, the type naming the kind in its messages.
//
//   {"type": "add", "inputs": ["wide", "deep"]}    // wide and deep: float rows of width 1
//   // InvalidInput "<path>: add needs equal widths, got 4 ('a') and 2 ('x')"
#pragma once

#include <array>
#include <vector>

#include "core/model/layer_kind.h"

namespace fedleaf::core {

// The fields of an elementwise layer ("input" is known so that a plan giving it is told that
// the kind needs "inputs").
inline constexpr std::array kElementwiseInputsFields{"type", "name", "input", "inputs"};

// The LayerKind parse of an elementwise kind (spec.kind names it): no fields but "name"
// (optional); at least two sources, each float rows, all of the first one's width, which
// becomes the spec's input and output width. Throws InvalidInput "<path>.inputs: <type> needs
// \"inputs\": at least two names", "<path>.inputs[k]: '<name>' is a sparse_ids input: an
// embedding_bag reads it" or "<path>: <type> needs equal widths, got <w0> ('<name0>') and <wk>
// ('<namek>')".
void parse_elementwise_inputs(const nlohmann::json& object, const LayerInput& input, LayerSpec spec,
                              std::vector<LayerSpec>& layers);

}  // namespace fedleaf::core
