// The dense layer: y = x W + b over a batch, W [in, units] row-major, b [units].
//
//   DenseLayer out(w, b, in, units);          // b may be null (use_bias false)
//   out.forward(x, batch_size, y);
//   out.backward(x, gy, batch_size, gw, gb, gx);   // gx may be null (first layer)
//
// Parameters are borrowed; gradients are summed into gw/gb (the caller zeroes them per batch).
// The loops are the kernels of dense_kernels.h.
#pragma once

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

#include "core/model/activation.h"
#include "core/model/layer_kind.h"
#include "core/model/parameter_gradient.h"

namespace fedleaf::core {

// The "dense" entry of the layer table (layer_kind.h). Fields: units, use_bias (default true),
// initializer (default glorot_uniform), activation (optional: expands into this layer and an
// activation layer, whose output the layer's name stands for); reads float rows, never a
// sparse_ids input. Declares "<name>/weight" [in, units] and,
// with use_bias, "<name>/bias" [units].
// The fields of a dense layer, its initializers and its choices (its activations: activation.h).
inline constexpr std::array kDenseFields{"type",     "name",        "input",     "units",
                                         "use_bias", "initializer", "activation"};
inline constexpr std::array kDenseInitializers{
    std::pair{"glorot_uniform", Initializer::kGlorotUniform},
    std::pair{"zeros", Initializer::kZeros}};
inline constexpr std::array kDenseChoices{
    LayerChoice{"initializer", choice_names_of<kDenseInitializers>},
    LayerChoice{"activation", choice_names_of<kActivations>}};

// What parse_dense_spec read (its activation is a layer of its own).
struct DenseConfig : LayerConfig {
  std::size_t units = 0;
  bool use_bias = true;
  Initializer initializer = Initializer::kGlorotUniform;
};

void parse_dense_spec(const nlohmann::json& object, const LayerInput& input, LayerSpec spec,
                      std::vector<LayerSpec>& layers);
void dense_parameters(const LayerSpec& spec, std::vector<ParameterSpec>& out);
void make_dense(const LayerSpec& spec, ParameterBinder& binder, std::size_t max_batch_size,
                ModelLayer& layer);

class DenseLayer {
 public:
  DenseLayer(const float* weight, const float* bias, std::size_t in, std::size_t units)
      : weight_(weight), bias_(bias), in_(in), units_(units) {}

  void forward(const float* x, std::size_t batch_size, float* y) const;
  // gx [batch, in] is overwritten when not null; gb is ignored without a bias.
  void backward(const float* x, const float* gy, std::size_t batch_size, ParameterGradient& gw,
                ParameterGradient* gb, float* gx) const;

 private:
  const float* weight_;
  const float* bias_;
  std::size_t in_;
  std::size_t units_;
};

}  // namespace fedleaf::core
