#include "core/train/dense_layer.h"

#include "core/train/dense_kernels.h"

namespace fedleaf::core {

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
