#include "core/model/dense_layer.h"

#include <memory>
#include <optional>

#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/kernels/dense_kernels.h"
#include "core/model/activation.h"
#include "core/model/layer_pass.h"
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
  auto config = std::make_shared<DenseConfig>();
  config->units = get_size(l, path, "units", std::nullopt, 1, 1u << 20);
  config->use_bias = get_bool(l, path, "use_bias", true);
  config->initializer =
      get_choice(l, path, "initializer", "glorot_uniform", "initializer", kDenseInitializers);
  spec.input_width = source.width;
  spec.output_width = config->units;
  spec.config = std::move(config);
  const json* act = find_field(l, "activation");
  std::optional<LayerSpec> activation;
  if (act != nullptr) {
    if (act->is_string()) {
      activation = activation_layer(act->get<std::string>(), path + ".activation", layers.size(),
                                    spec.output_width);
    }
    if (!activation) fail(path + ".activation", "expected relu, sigmoid or tanh");
  }
  layers.push_back(std::move(spec));
  if (activation) layers.push_back(std::move(*activation));
}

void dense_parameters(const LayerSpec& spec, std::vector<ParameterSpec>& out) {
  const auto& config = layer_config<DenseConfig>(spec);
  ParameterSpec w;
  w.name = spec.name + "/weight";
  w.shape = {spec.input_width, config.units};
  w.initializer = config.initializer;
  w.fan_in = spec.input_width;
  w.fan_out = config.units;
  w.declared_by = spec.path;
  out.push_back(w);
  if (config.use_bias) {
    ParameterSpec b;
    b.name = spec.name + "/bias";
    b.shape = {config.units};
    b.initializer = Initializer::kZeros;
    b.declared_by = spec.path;
    out.push_back(b);
  }
}

namespace {

class DenseOp : public LayerOp {
 public:
  explicit DenseOp(DenseLayer dense) : dense_(dense) {}
  void forward(LayerPass& pass, ModelLayer& layer) override {
    dense_.forward(pass.rows(layer.sources.front()), pass.size(), layer.output.data());
  }
  void backward(LayerPass& pass, ModelLayer& layer) override {
    const NodeRef& source = layer.sources.front();
    float* gx = pass.gradient_target(source);
    ParameterGradient* gb = layer.bias_gradient < 0 ? nullptr : &pass.gradient(layer.bias_gradient);
    dense_.backward(pass.rows(source), layer.grad_output.data(), pass.size(),
                    pass.gradient(layer.weight_gradient), gb, gx);
    if (gx != nullptr) pass.gradient_sent(source, pass.size() * pass.width(source));
  }

 private:
  DenseLayer dense_;
};

}  // namespace

void make_dense(const LayerSpec& spec, ParameterBinder& binder, std::size_t /*max_batch_size*/,
                ModelLayer& layer) {
  const auto& config = layer_config<DenseConfig>(spec);
  const ParameterBinder::Bound w = binder.next();
  layer.weight_gradient = w.gradient;
  const float* bias = nullptr;
  if (config.use_bias) {
    const ParameterBinder::Bound b = binder.next();
    layer.bias_gradient = b.gradient;
    bias = b.tensor->data<float>();
  }
  layer.op = std::make_unique<DenseOp>(
      DenseLayer(w.tensor->data<float>(), bias, spec.input_width, config.units));
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
