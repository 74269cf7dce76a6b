#include "core/model/multiply_layer.h"

#include <algorithm>
#include <memory>

#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/model/layer_pass.h"
#include "core/model/model_layer.h"

namespace fedleaf::core {

void parse_multiply_spec(const nlohmann::json& l, const LayerInput& input, LayerSpec spec,
                         std::vector<LayerSpec>& layers) {
  check_known_fields(l, spec.path, kMultiplyFields);
  if (input.sources.size() < 2) {
    plan_json::fail(spec.path + ".inputs", "multiply needs \"inputs\": at least two names");
  }
  const LayerSource& first = input.sources.front();
  for (std::size_t k = 0; k < input.sources.size(); ++k) {
    const LayerSource& s = input.sources[k];
    if (s.kind != InputKind::kDense) {
      plan_json::fail(spec.path + ".inputs[" + std::to_string(k) + "]",
                      "'" + s.name + "' is a sparse_ids input: an embedding_bag reads it");
    }
    if (s.width != first.width) {
      plan_json::fail(spec.path, "multiply needs equal widths, got " + std::to_string(first.width) +
                                     " ('" + first.name + "') and " + std::to_string(s.width) +
                                     " ('" + s.name + "')");
    }
  }
  spec.input_width = first.width;
  spec.output_width = first.width;
  layers.push_back(std::move(spec));
}

void multiply_forward(const std::vector<const float*>& xs, std::size_t n, float* out) {
  std::copy(xs[0], xs[0] + n, out);
  for (std::size_t k = 1; k < xs.size(); ++k) {
    const float* x = xs[k];
    for (std::size_t i = 0; i < n; ++i) out[i] *= x[i];
  }
}

void multiply_backward(const std::vector<const float*>& xs, std::size_t input, const float* gy,
                       std::size_t n, float* gx) {
  std::copy(gy, gy + n, gx);
  for (std::size_t k = 0; k < xs.size(); ++k) {
    if (k == input) continue;
    const float* x = xs[k];
    for (std::size_t i = 0; i < n; ++i) gx[i] *= x[i];
  }
}

namespace {

class MultiplyOp : public LayerOp {
 public:
  void forward(LayerPass& pass, ModelLayer& layer) override {
    gather(pass, layer);
    multiply_forward(sources_, pass.size() * layer.width, layer.output.data());
  }
  void backward(LayerPass& pass, ModelLayer& layer) override {
    gather(pass, layer);
    const std::size_t count = pass.size() * layer.width;
    for (std::size_t k = 0; k < layer.sources.size(); ++k) {
      const NodeRef& s = layer.sources[k];
      if (float* gx = pass.gradient_target(s)) {
        multiply_backward(sources_, k, layer.grad_output.data(), count, gx);
        pass.gradient_sent(s, count);
      }
    }
  }

 private:
  void gather(LayerPass& pass, const ModelLayer& layer) {
    sources_.clear();
    for (const NodeRef& s : layer.sources) sources_.push_back(pass.rows(s));
  }

  std::vector<const float*> sources_;
};

}  // namespace

void make_multiply(const LayerSpec& /*spec*/, ParameterBinder& /*binder*/,
                   std::size_t /*max_batch_size*/, ModelLayer& layer) {
  layer.op = std::make_unique<MultiplyOp>();
}

}  // namespace fedleaf::core
