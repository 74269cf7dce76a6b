#include "core/model/activation.h"

#include <cmath>
#include <memory>

#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/model/layer_pass.h"
#include "core/model/model_layer.h"

namespace fedleaf::core {

bool activation_type(const std::string& name, LayerType& out) {
  for (const auto& [text, type] : kActivations) {
    if (name != text) continue;
    out = type;
    return true;
  }
  return false;
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
  layers.push_back(std::move(spec));
}

void activation_forward(LayerType type, const float* x, float* y, std::size_t n) {
  switch (type) {
    case LayerType::kRelu:
      for (std::size_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return;
    case LayerType::kSigmoid:
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
    case LayerType::kTanh:
      for (std::size_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
      return;
    default:
      return;
  }
}

void activation_backward(LayerType type, const float* y, const float* gy, float* gx,
                         std::size_t n) {
  switch (type) {
    case LayerType::kRelu:
      for (std::size_t i = 0; i < n; ++i) gx[i] = y[i] > 0.0f ? gy[i] : 0.0f;
      return;
    case LayerType::kSigmoid:
      for (std::size_t i = 0; i < n; ++i) gx[i] = gy[i] * y[i] * (1.0f - y[i]);
      return;
    case LayerType::kTanh:
      for (std::size_t i = 0; i < n; ++i) gx[i] = gy[i] * (1.0f - y[i] * y[i]);
      return;
    default:
      return;
  }
}

namespace {

class ActivationOp : public LayerOp {
 public:
  explicit ActivationOp(LayerType type) : type_(type) {}
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
  LayerType type_;
};

}  // namespace

void make_activation(const LayerSpec& spec, ParameterBinder& /*binder*/,
                     std::size_t /*max_batch_size*/, ModelLayer& layer) {
  layer.op = std::make_unique<ActivationOp>(spec.type);
}

}  // namespace fedleaf::core
