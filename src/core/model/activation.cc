#include "core/model/activation.h"

#include <cmath>
#include <memory>

#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/model/layer_pass.h"
#include "core/model/layer_registry.h"
#include "core/model/model_layer.h"

namespace fedleaf::core {

namespace {

// The config of activation kind `type`, or null when `type` names no activation.
std::shared_ptr<const ActivationConfig> config_of(const std::string& type) {
  for (const auto& [name, function] : kActivations) {
    if (type != name) continue;
    auto config = std::make_shared<ActivationConfig>();
    config->function = function;
    return config;
  }
  return nullptr;
}

}  // namespace

std::optional<LayerSpec> activation_layer(const std::string& name, const std::string& path,
                                          std::size_t source, std::size_t width) {
  std::shared_ptr<const ActivationConfig> config = config_of(name);
  if (config == nullptr) return std::nullopt;
  LayerSpec spec;
  spec.kind = find_layer_kind(name);
  spec.path = path;
  spec.input_width = width;
  spec.output_width = width;
  spec.sources = {NodeRef{false, source}};
  spec.config = std::move(config);
  return spec;
}

void parse_activation_spec(const nlohmann::json& l, const LayerInput& input, LayerSpec spec,
                           std::vector<LayerSpec>& layers) {
  check_known_fields(l, spec.path, kActivationFields);
  const LayerSource& source = input.sources.front();
  if (source.kind != InputKind::kDense) {
    plan_json::fail(spec.path + ".type", "a sparse_ids input needs an embedding_bag first layer");
  }
  spec.input_width = source.width;
  spec.output_width = source.width;
  spec.config = config_of(spec.kind->type);
  layers.push_back(std::move(spec));
}

void activation_forward(Activation type, const float* x, float* y, std::size_t n) {
  switch (type) {
    case Activation::kRelu:
      for (std::size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return;
    case Activation::kSigmoid:
      for (std::size_t i = 0; i < n; ++i) {
        // Both branches avoid exp overflow.
        if (x[i] >= 0.0f) {
          y[i] = 1.0f / (1.0f + std::exp(-x[i]));
        } else {
          const float e = std::exp(x[i]);
          y[i] = e / (1.0f + e);
        }
      }
      return;
    case Activation::kTanh:
      for (std::size_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
      return;
  }
}

void activation_backward(Activation type, const float* y, const float* gy, float* gx,
                         std::size_t n) {
  switch (type) {
    case Activation::kRelu:
      for (std::size_t i = 0; i < n; ++i) gx[i] = y[i] > 0.0f ? gy[i] : 0.0f;
      return;
    case Activation::kSigmoid:
      for (std::size_t i = 0; i < n; ++i) gx[i] = gy[i] * y[i] * (1.0f - y[i]);
      return;
    case Activation::kTanh:
      for (std::size_t i = 0; i < n; ++i) gx[i] = gy[i] * (1.0f - y[i] * y[i]);
      return;
  }
}

namespace {

class ActivationOp : public LayerOp {
 public:
  explicit ActivationOp(Activation type) : type_(type) {}
  void forward(LayerPass& pass, ModelLayer& layer) override {
    activation_forward(type_, pass.rows(layer.sources.front()), layer.output.data(),
                       pass.size() * layer.width);
  }
  void backward(LayerPass& pass, ModelLayer& layer) override {
    const NodeRef& source = layer.sources.front();
    float* gx = pass.gradient_target(source);
    if (gx == nullptr) return;  // on a model input: nothing to send back
    activation_backward(type_, layer.output.data(), layer.grad_output.data(), gx,
                        pass.size() * layer.width);
    pass.gradient_sent(source, pass.size() * pass.width(source));
  }

 private:
  Activation type_;
};

}  // namespace

void make_activation(const LayerSpec& spec, ParameterBinder& /*binder*/,
                     std::size_t /*max_batch_size*/, ModelLayer& layer) {
  layer.op = std::make_unique<ActivationOp>(layer_config<ActivationConfig>(spec).function);
}

}  // namespace fedleaf::core
