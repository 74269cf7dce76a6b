#include "core/model/dropout.h"

#include <algorithm>
#include <memory>

#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/model/layer_pass.h"
#include "core/model/model_layer.h"

namespace fedleaf::core {
namespace {

// SplitMix64's output function: a bijective mix of all 64 bits.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t row_key(std::uint64_t seed, std::uint64_t step, std::uint64_t example) {
  return mix(mix(mix(seed) ^ step) ^ example);
}

// Hash values (24 bits) below it drop the unit.
std::uint32_t threshold(float rate) {
  return static_cast<std::uint32_t>(static_cast<double>(rate) * 16777216.0);
}

}  // namespace

void parse_dropout_spec(const nlohmann::json& l, const LayerInput& input, LayerSpec spec,
                        std::vector<LayerSpec>& layers) {
  using namespace plan_json;
  check_known_fields(l, spec.path, kDropoutFields);
  const LayerSource& source = input.sources.front();
  if (source.kind != InputKind::kDense) {
    fail(spec.path + ".type", "a sparse_ids input needs an embedding_bag first layer");
  }
  auto config = std::make_shared<DropoutConfig>();
  config->rate = get_float(l, spec.path, "rate", std::nullopt, "in [0, 1)",
                           [](double d) { return d >= 0 && d < 1; });
  config->seed = get_integer(l, spec.path, "seed", 0, 0, ~std::uint64_t{0});
  spec.config = std::move(config);
  spec.input_width = source.width;
  spec.output_width = source.width;
  layers.push_back(std::move(spec));
}

bool dropout_keeps(std::uint64_t seed, std::uint64_t step, std::uint64_t example,
                   std::uint64_t unit, float rate) {
  return (mix(row_key(seed, step, example) ^ unit) >> 40) >= threshold(rate);
}

void dropout_mask(std::uint64_t seed, std::uint64_t step, std::size_t batch, std::size_t width,
                  float rate, float* mask) {
  const std::uint32_t below = threshold(rate);
  const float scale = 1.0f / (1.0f - rate);
  for (std::size_t b = 0; b < batch; ++b) {
    const std::uint64_t key = row_key(seed, step, b);
    for (std::size_t u = 0; u < width; ++u) {
      mask[b * width + u] = (mix(key ^ u) >> 40) >= below ? scale : 0.0f;
    }
  }
}

void dropout_forward(const float* x, const float* mask, std::size_t n, float* y) {
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] * mask[i];
}

void dropout_backward(const float* gy, const float* mask, std::size_t n, float* gx) {
  for (std::size_t i = 0; i < n; ++i) gx[i] = gy[i] * mask[i];
}

namespace {

class DropoutOp : public LayerOp {
 public:
  DropoutOp(float rate, std::uint64_t seed, std::size_t mask_size)
      : rate_(rate), seed_(seed), mask_(mask_size, 0.0f) {}
  // Training: the mask of (seed, step, example, unit); inference: the identity.
  void forward(LayerPass& pass, ModelLayer& layer) override {
    const float* x = pass.rows(layer.sources.front());
    const std::size_t count = pass.size() * layer.width;
    if (pass.training()) {
      dropout_mask(seed_, pass.step(), pass.size(), layer.width, rate_, mask_.data());
      dropout_forward(x, mask_.data(), count, layer.output.data());
    } else {
      std::copy(x, x + count, layer.output.data());
    }
  }
  void backward(LayerPass& pass, ModelLayer& layer) override {
    const NodeRef& source = layer.sources.front();
    float* gx = pass.gradient_target(source);
    if (gx == nullptr) return;  // on a model input: nothing to send back
    dropout_backward(layer.grad_output.data(), mask_.data(), pass.size() * layer.width, gx);
    pass.gradient_sent(source, pass.size() * pass.width(source));
  }

 private:
  float rate_;
  std::uint64_t seed_;
  std::vector<float> mask_;  // [max_batch, width], the last training step's
};

}  // namespace

void make_dropout(const LayerSpec& spec, ParameterBinder& /*binder*/, std::size_t max_batch_size,
                  ModelLayer& layer) {
  const auto& config = layer_config<DropoutConfig>(spec);
  layer.op =
      std::make_unique<DropoutOp>(config.rate, config.seed, max_batch_size * spec.output_width);
}

}  // namespace fedleaf::core
