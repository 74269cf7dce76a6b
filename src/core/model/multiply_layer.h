// The multiply layer: the elementwise product of its inputs (float rows of equal width), Keras's
// Multiply, e.g. a gate (a sigmoid's output) applied to features.
//
//   multiply_forward({a, b}, batch * width, out);        // out = a · b, in the listed order
//   multiply_backward({a, b}, /*input=*/0, gy, n, ga);   // ga = gy · b
//
// No parameters.
#pragma once

#include <cstddef>
#include <vector>

#include "core/model/layer_kind.h"

namespace fedleaf::core {

// The "multiply" entry of the layer table (layer_kind.h): "inputs" (at least two names of float
// rows of equal width), "name" optional; output width = that width. Its fields and parse are an
// elementwise layer's (elementwise_inputs.h).
void make_multiply(const LayerSpec& spec, ParameterBinder& binder, std::size_t max_batch_size,
                   ModelLayer& layer);

// out[i] = ((xs[0][i] · xs[1][i]) · xs[2][i]) ... for i < n.
void multiply_forward(const std::vector<const float*>& xs, std::size_t n, float* out);
// gx[i] = gy[i] · the product of every xs[j][i] but j = `input`, in the listed order (no
// division, so an input holding 0 gets its exact gradient).
void multiply_backward(const std::vector<const float*>& xs, std::size_t input, const float* gy,
                       std::size_t n, float* gx);

}  // namespace fedleaf::core
