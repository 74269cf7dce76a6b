// Elementwise activations relu, sigmoid and tanh, and their backward passes expressed through
// the forward output (so the input need not be kept).
//
//   activation_forward(Activation::kTanh, x, y, n);
//   activation_backward(Activation::kTanh, y, gy, gx, n);   // gx = gy · (1 - y²)
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model/layer_kind.h"
#include "core/model/model_spec.h"

namespace fedleaf::core {

enum class Activation { kRelu, kSigmoid, kTanh };

// The activations (layer types of their own, and a dense layer's "activation") and the fields of
// an activation layer.
inline constexpr std::array kActivations{std::pair{"relu", Activation::kRelu},
                                         std::pair{"sigmoid", Activation::kSigmoid},
                                         std::pair{"tanh", Activation::kTanh}};
inline constexpr std::array kActivationFields{"type", "name", "input"};

// An activation layer's config: its function (its kind's type).
struct ActivationConfig : LayerConfig {
  Activation function = Activation::kRelu;
};

// The unnamed activation layer `name` ("relu", "sigmoid" or "tanh") at `path` over the `width`
// floats of layer `source`: what a dense layer's "activation" expands into; nullopt for any other
// name.
std::optional<LayerSpec> activation_layer(const std::string& name, const std::string& path,
                                          std::size_t source, std::size_t width);

// The "relu", "sigmoid" and "tanh" entries of the layer table (layer_kind.h): no fields but
// "name" (optional), no parameters; reads float rows, never a sparse_ids input; output width =
// input width.
void parse_activation_spec(const nlohmann::json& object, const LayerInput& input, LayerSpec spec,
                           std::vector<LayerSpec>& layers);
void make_activation(const LayerSpec& spec, ParameterBinder& binder, std::size_t max_batch_size,
                     ModelLayer& layer);

// x and y may be the same buffer.
void activation_forward(Activation type, const float* x, float* y, std::size_t n);
// gx = gy · f'(x) written through y = f(x); gy and gx may be the same buffer. relu'(0) = 0.
void activation_backward(Activation type, const float* y, const float* gy, float* gx,
                         std::size_t n);

}  // namespace fedleaf::core
