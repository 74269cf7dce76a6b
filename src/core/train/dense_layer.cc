#include "core/train/dense_layer.h"

#include "core/train/dense_kernels.h"

namespace fedleaf::core {

void DenseLayer::forward(const float* x, std::size_t batch_size, float* y) const {
  for (std::size_t b = 0; b < batch_size; ++b) {
    kernels::vecmat(in_, units_, x + b * in_, weight_, bias_, y + b * units_);
  }
}

void DenseLayer::backward(const float* x, const float* gy, std::size_t batch_size,
                          ParameterGradient& gw, ParameterGradient* gb, float* gx) const {
  for (std::size_t b = 0; b < batch_size; ++b) {
    const float* g = gy + b * units_;
    kernels::outer_accumulate(in_, units_, x + b * in_, g, gw.values.data());
    if (bias_ != nullptr && gb != nullptr) kernels::axpy(units_, 1.0f, g, gb->values.data());
    if (gx != nullptr) kernels::matvec(in_, units_, weight_, g, gx + b * in_);
  }
}

}  // namespace fedleaf::core
