// The dropout layer (training only): each unit of each example is zeroed with probability
// `rate`, the others scaled by 1/(1-rate) (inverted dropout, so inference is the identity).
//
//   dropout_mask(seed, step, batch, width, rate, mask);   // mask[b*width+u]: 0 or 1/(1-rate)
//   dropout_forward(x, mask, batch * width, y);            // y = x · mask
//   dropout_backward(gy, mask, batch * width, gx);         // gx = gy · mask
//
// The mask is a counter-based hash (SplitMix64's finalizer) of (seed, step number, example
// position in the batch, unit), integer arithmetic only: native and wasm draw the same mask, and
// a step's mask needs no state carried from earlier steps.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/model/layer_kind.h"

namespace fedleaf::core {

// The "dropout" entry of the layer table (layer_kind.h): "rate" (required, in [0, 1)), "seed"
// (integer, default 0), "name" optional; reads float rows; output width = input width.
inline constexpr std::array kDropoutFields{"type", "name", "input", "rate", "seed"};

// What parse_dropout_spec read.
struct DropoutConfig : LayerConfig {
  float rate = 0.0f;
  std::uint64_t seed = 0;
};

void parse_dropout_spec(const nlohmann::json& object, const LayerInput& input, LayerSpec spec,
                        std::vector<LayerSpec>& layers);
void make_dropout(const LayerSpec& spec, ParameterBinder& binder, std::size_t max_batch_size,
                  ModelLayer& layer);

// Whether unit `unit` of example `example` is kept at training step `step`: a 24-bit hash of
// the four numbers compared with rate · 2^24 (keeps with probability 1 - rate up to 2^-24).
bool dropout_keeps(std::uint64_t seed, std::uint64_t step, std::uint64_t example,
                   std::uint64_t unit, float rate);
// mask [batch, width]: 1/(1-rate) where dropout_keeps, else 0.
void dropout_mask(std::uint64_t seed, std::uint64_t step, std::size_t batch, std::size_t width,
                  float rate, float* mask);
void dropout_forward(const float* x, const float* mask, std::size_t n, float* y);
// gx and gy may be the same buffer.
void dropout_backward(const float* gy, const float* mask, std::size_t n, float* gx);

}  // namespace fedleaf::core
