#include "core/model/add_layer.h"

#include <algorithm>
#include <memory>

#include "core/model/layer_pass.h"
#include "core/model/model_layer.h"

namespace fedleaf::core {

void add_forward(const std::vector<const float*>& xs, std::size_t n, float* out) {
  std::copy(xs[0], xs[0] + n, out);
  for (std::size_t k = 1; k < xs.size(); ++k) {
    const float* x = xs[k];
    for (std::size_t i = 0; i < n; ++i) out[i] += x[i];
  }
}

namespace {

class AddOp : public LayerOp {
 public:
  void forward(LayerPass& pass, ModelLayer& layer) override {
    sources_.clear();
    for (const NodeRef& s : layer.sources) sources_.push_back(pass.rows(s));
    add_forward(sources_, pass.size() * layer.width, layer.output.data());
  }
  void backward(LayerPass& pass, ModelLayer& layer) override {
    const float* gy = layer.grad_output.data();
    for (const NodeRef& s : layer.sources) {
      const std::size_t count = pass.size() * pass.width(s);
      if (float* gx = pass.gradient_target(s)) {
        std::copy(gy, gy + count, gx);
        pass.gradient_sent(s, count);
      }
    }
  }

 private:
  std::vector<const float*> sources_;
};

}  // namespace

void make_add(const LayerSpec& /*spec*/, ParameterBinder& /*binder*/,
              std::size_t /*max_batch_size*/, ModelLayer& layer) {
  layer.op = std::make_unique<AddOp>();
}

}  // namespace fedleaf::core
