// The concatenate layer: joins its inputs' rows side by side, in the order "inputs" lists them.
//
//   concatenate_forward({a, b}, {16, 8}, batch, out);            // out [batch, 24]
//   concatenate_backward(gy, 24, /*offset=*/16, /*width=*/8, batch, gb);   // b's gradient
//
// No parameters; a functional model's join of its embedding outputs and dense features.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "core/model/layer_kind.h"

namespace fedleaf::core {

// The "concatenate" entry of the layer table (layer_kind.h): "inputs" (at least two names, each
// float rows: a dense input or a layer's output), "name" optional; output width = the sum.
// The fields of a concatenate layer ("input" is known so that a plan giving it is told that
// concatenate needs "inputs").
inline constexpr std::array kConcatenateFields{"type", "name", "input", "inputs"};

void parse_concatenate_spec(const nlohmann::json& object, const LayerInput& input, LayerSpec spec,
                            std::vector<LayerSpec>& layers);
void make_concatenate(const LayerSpec& spec, ParameterBinder& binder, std::size_t max_batch_size,
                      ModelLayer& layer);

// out[b] = [xs[0][b], xs[1][b], ...]; xs[k] is [batch, widths[k]].
void concatenate_forward(const std::vector<const float*>& xs,
                         const std::vector<std::size_t>& widths, std::size_t batch, float* out);
// gx [batch, width] = columns [offset, offset + width) of gy [batch, out_width]: the gradient of
// the input that sits at `offset`.
void concatenate_backward(const float* gy, std::size_t out_width, std::size_t offset,
                          std::size_t width, std::size_t batch, float* gx);

}  // namespace fedleaf::core
