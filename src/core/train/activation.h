// Elementwise activations relu, sigmoid and tanh, and their backward passes expressed through
// the forward output (so the input need not be kept).
//
//   activation_forward(LayerType::kTanh, x, y, n);
//   activation_backward(LayerType::kTanh, y, gy, gx, n);   // gx = gy · (1 - y²)
#pragma once

#include <cstddef>

#include "core/train/plan.h"

namespace fedleaf::core {

// `type` is kRelu, kSigmoid or kTanh; x and y may be the same buffer.
void activation_forward(LayerType type, const float* x, float* y, std::size_t n);
// gx = gy · f'(x) written through y = f(x); gy and gx may be the same buffer. relu'(0) = 0.
void activation_backward(LayerType type, const float* y, const float* gy, float* gx, std::size_t n);

}  // namespace fedleaf::core
