// Elementwise activations relu, sigmoid and tanh, and their backward passes expressed through
// the forward output (so the input need not be kept).
//
//   activation_forward(LayerType::kTanh, x, y, n);
//   activation_backward(LayerType::kTanh, y, gy, gx, n);   // gx = gy · (1 - y²)
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "core/model/layer_kind.h"
#include "core/model/model_spec.h"

namespace fedleaf::core {

// The activation name "relu", "sigmoid" or "tanh" as `out`; false for any other name.
// The activations (layer types of their own, and a dense layer's "activation") and the fields of
// an activation layer.
inline constexpr std::array kActivations{std::pair{"relu", LayerType::kRelu},
                                         std::pair{"sigmoid", LayerType::kSigmoid},
                                         std::pair{"tanh", LayerType::kTanh}};
inline constexpr std::array kActivationFields{"type", "name", "input"};

bool activation_type(const std::string& name, LayerType& out);

// The "relu", "sigmoid" and "tanh" entries of the layer table (layer_kind.h): no fields but
// "name" (optional), no parameters; reads float rows, never a sparse_ids input; output width =
// input width.
void parse_activation_spec(const nlohmann::json& object, const LayerInput& input, LayerSpec spec,
                           std::vector<LayerSpec>& layers);
void make_activation(const LayerSpec& spec, ParameterBinder& binder, std::size_t max_batch_size,
                     ModelLayer& layer);

// `type` is kRelu, kSigmoid or kTanh; x and y may be the same buffer.
void activation_forward(LayerType type, const float* x, float* y, std::size_t n);
// gx = gy · f'(x) written through y = f(x); gy and gx may be the same buffer. relu'(0) = 0.
void activation_backward(LayerType type, const float* y, const float* gy, float* gx, std::size_t n);

}  // namespace fedleaf::core
