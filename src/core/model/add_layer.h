// The add layer: the elementwise sum of its inputs (equal widths), e.g. a wide & deep model's
// wide logit plus its deep logit.
//
//   add_forward({a, b}, batch * width, out);     // out = a + b, summed in the listed order
//   // backward: each input's gradient is gy itself
//
// No parameters.
#pragma once

#include <cstddef>
#include <vector>

#include "core/model/layer_kind.h"

namespace fedleaf::core {

// The "add" entry of the layer table (layer_kind.h): "inputs" (at least two names of float rows
// of equal width), "name" optional; output width = that width. Its fields and parse are an
// elementwise layer's (elementwise_inputs.h).
void make_add(const LayerSpec& spec, ParameterBinder& binder, std::size_t max_batch_size,
              ModelLayer& layer);

// out[i] = ((xs[0][i] + xs[1][i]) + xs[2][i]) ... for i < n.
void add_forward(const std::vector<const float*>& xs, std::size_t n, float* out);

}  // namespace fedleaf::core
