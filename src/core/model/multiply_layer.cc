#include "core/model/multiply_layer.h"

#include <algorithm>
#include <memory>

#include "core/model/layer_pass.h"
#include "core/model/model_layer.h"

namespace fedleaf::core {

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
