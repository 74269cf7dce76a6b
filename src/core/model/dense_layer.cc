#include "core/model/dense_layer.h"

#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/kernels/dense_kernels.h"
#include "core/model/activation.h"
#include "core/model/model_layer.h"

namespace fedleaf::core {

void parse_dense_spec(const nlohmann::json& l, const LayerInput& input, LayerSpec spec,
                      std::vector<LayerSpec>& layers) {
  using namespace plan_json;
  const std::string path = spec.path;
  check_known_fields(l, path, kDenseFields);
  const LayerSource& source = input.sources.front();
  if (source.kind != InputKind::kDense) {
    fail(path + ".type", "a sparse_ids input needs an embedding_bag first layer");
  }
  spec.units = get_size(l, path, "units", std::nullopt, 1, 1u << 20);
  spec.use_bias = get_bool(l, path, "use_bias", true);
  spec.initializer =
      get_choice(l, path, "initializer", "glorot_uniform", "initializer", kDenseInitializers);
  spec.input_width = source.width;
  spec.output_width = spec.units;
  const json* act = find_field(l, "activation");
  LayerType activation = LayerType::kRelu;
  if (act != nullptr &&
      (!act->is_string() || !activation_type(act->get<std::string>(), activation))) {
    fail(path + ".activation", "expected relu, sigmoid or tanh");
  }
  const std::size_t width = spec.output_width;
  layers.push_back(std::move(spec));
  if (act != nullptr) {
    LayerSpec expanded;
    expanded.type = activation;
    expanded.path = path + ".activation";
    expanded.input_width = width;
    expanded.output_width = width;
    expanded.sources = {NodeRef{false, layers.size() - 1}};
    layers.push_back(std::move(expanded));
  }
}

void dense_parameters(const LayerSpec& spec, std::vector<ParameterSpec>& out) {
  ParameterSpec w;
  w.name = spec.name + "/weight";
  w.shape = {spec.input_width, spec.units};
  w.initializer = spec.initializer;
  w.fan_in = spec.input_width;
  w.fan_out = spec.units;
  w.declared_by = spec.path;
  out.push_back(w);
  if (spec.use_bias) {
    ParameterSpec b;
    b.name = spec.name + "/bias";
    b.shape = {spec.units};
    b.initializer = Initializer::kZeros;
    b.declared_by = spec.path;
    out.push_back(b);
  }
}

void make_dense(const LayerSpec& spec, ParameterBinder& binder, ModelLayer& layer) {
  const ParameterBinder::Bound w = binder.next();
  layer.weight_gradient = w.gradient;
  const float* bias = nullptr;
  if (spec.use_bias) {
    const ParameterBinder::Bound b = binder.next();
    layer.bias_gradient = b.gradient;
    bias = b.tensor->data<float>();
  }
  layer.dense.emplace(w.tensor->data<float>(), bias, spec.input_width, spec.units);
}

void DenseLayer::forward(const float* x, std::size_t batch_size, float* y) const {
  kernels::vecmat_batch(batch_size, in_, units_, x, weight_, bias_, y);
}

void DenseLayer::backward(const float* x, const float* gy, std::size_t batch_size,
                          ParameterGradient& gw, ParameterGradient* gb, float* gx) const {
  kernels::outer_accumulate_batch(batch_size, in_, units_, x, gy, gw.values.data());
  if (bias_ != nullptr && gb != nullptr) {
    for (std::size_t b = 0; b < batch_size; ++b) {
      kernels::axpy(units_, 1.0f, gy + b * units_, gb->values.data());
    }
  }
  if (gx != nullptr) kernels::matvec_batch(batch_size, in_, units_, weight_, gy, gx);
}

}  // namespace fedleaf::core
