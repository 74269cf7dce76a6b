// kernels::reference: the plain scalar loops every kernel of dense_kernels.h is tested against
// (same contracts, same order of float operations, no intrinsics).
#include <cmath>

#include "core/kernels/dense_kernels.h"

namespace fedleaf::core::kernels {

namespace reference {

void axpy(std::size_t n, float a, const float* x, float* y) {
  for (std::size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void scale(std::size_t n, float a, float* x) {
  for (std::size_t i = 0; i < n; ++i) x[i] *= a;
}

float dot(std::size_t n, const float* x, const float* y) {
  float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (std::size_t k = 0; k < 4; ++k) lane[k] += x[i + k] * y[i + k];
  }
  float s = (lane[0] + lane[1]) + (lane[2] + lane[3]);
  for (; i < n; ++i) s += x[i] * y[i];
  return s;
}

void vecmat(std::size_t rows, std::size_t cols, const float* x, const float* w, const float* bias,
            float* y) {
  for (std::size_t j = 0; j < cols; ++j) y[j] = bias ? bias[j] : 0.0f;
  for (std::size_t i = 0; i < rows; ++i) {
    if (x[i] == 0.0f) continue;
    for (std::size_t j = 0; j < cols; ++j) y[j] += x[i] * w[i * cols + j];
  }
}

void matvec(std::size_t rows, std::size_t cols, const float* w, const float* g, float* out) {
  for (std::size_t i = 0; i < rows; ++i) out[i] = reference::dot(cols, w + i * cols, g);
}

void outer_accumulate(std::size_t rows, std::size_t cols, const float* x, const float* g,
                      float* gw) {
  for (std::size_t i = 0; i < rows; ++i) {
    if (x[i] == 0.0f) continue;
    for (std::size_t j = 0; j < cols; ++j) gw[i * cols + j] += x[i] * g[j];
  }
}

void vecmat_batch(std::size_t n, std::size_t rows, std::size_t cols, const float* x, const float* w,
                  const float* bias, float* y) {
  for (std::size_t b = 0; b < n; ++b)
    reference::vecmat(rows, cols, x + b * rows, w, bias, y + b * cols);
}

void matvec_batch(std::size_t n, std::size_t rows, std::size_t cols, const float* w, const float* g,
                  float* gx) {
  for (std::size_t b = 0; b < n; ++b) reference::matvec(rows, cols, w, g + b * cols, gx + b * rows);
}

void outer_accumulate_batch(std::size_t n, std::size_t rows, std::size_t cols, const float* x,
                            const float* g, float* gw) {
  for (std::size_t b = 0; b < n; ++b)
    reference::outer_accumulate(rows, cols, x + b * rows, g + b * cols, gw);
}

void gather_weighted_sum(std::size_t dim, std::size_t count, const std::uint32_t* ids,
                         const float* weights, const float* table, float* out) {
  for (std::size_t k = 0; k < dim; ++k) out[k] = 0.0f;
  for (std::size_t j = 0; j < count; ++j) {
    reference::axpy(dim, weights ? weights[j] : 1.0f,
                    table + static_cast<std::size_t>(ids[j]) * dim, out);
  }
}

void scatter_weighted_add(std::size_t dim, std::size_t count, const std::uint32_t* slots,
                          const float* weights, float scale, const float* g, float* values) {
  for (std::size_t j = 0; j < count; ++j) {
    const float a = (weights ? weights[j] : 1.0f) * scale;
    if (a != 0.0f) reference::axpy(dim, a, g, values + static_cast<std::size_t>(slots[j]) * dim);
  }
}

void sgd_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                     const float* g, float* p, float lr_scale) {
  for (std::size_t r = 0; r < count; ++r) {
    const float* gr = g + r * row_size;
    float* pr = p + row_start(rows, r, row_size);
    for (std::size_t k = 0; k < row_size; ++k) pr[k] -= lr_scale * gr[k];
  }
}

void momentum_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                          const float* g, float* m, float* p, const MomentumStep& step) {
  for (std::size_t r = 0; r < count; ++r) {
    const std::size_t start = row_start(rows, r, row_size);
    const float* gr = g + r * row_size;
    float* mr = m + start;
    float* pr = p + start;
    for (std::size_t k = 0; k < row_size; ++k) {
      mr[k] = step.momentum * mr[k] + step.scale * gr[k];
      pr[k] -= step.learning_rate * mr[k];
    }
  }
}

void adam_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                      const float* g, float* m, float* v, std::size_t state_stride, float* p,
                      const AdamStep& step) {
  const float one_minus_b1 = 1.0f - step.beta1;
  const float one_minus_b2 = 1.0f - step.beta2;
  for (std::size_t r = 0; r < count; ++r) {
    const std::size_t state = row_start(rows, r, state_stride);
    const float* gr = g + r * row_size;
    float* mr = m + state;
    float* vr = v + state;
    float* pr = p + row_start(rows, r, row_size);
    for (std::size_t k = 0; k < row_size; ++k) {
      const float gk = step.scale * gr[k];
      mr[k] = step.beta1 * mr[k] + one_minus_b1 * gk;
      vr[k] = step.beta2 * vr[k] + one_minus_b2 * gk * gk;
      pr[k] -= step.step * mr[k] / (std::sqrt(vr[k]) + step.epsilon);
    }
  }
}

}  // namespace reference

}  // namespace fedleaf::core::kernels
