#include "core/train/dense_kernels.h"

#include <cmath>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace fedleaf::core::kernels {
namespace {

// Start of row r of a [*, row_size] buffer addressed through `rows` (null: row r itself).
inline std::size_t row_start(const std::uint32_t* rows, std::size_t r, std::size_t row_size) {
  return (rows != nullptr ? static_cast<std::size_t>(rows[r]) : r) * row_size;
}

}  // namespace

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
                      const float* g, float* m, float* v, float* p, const AdamStep& step) {
  const float one_minus_b1 = 1.0f - step.beta1;
  const float one_minus_b2 = 1.0f - step.beta2;
  for (std::size_t r = 0; r < count; ++r) {
    const std::size_t start = row_start(rows, r, row_size);
    const float* gr = g + r * row_size;
    float* mr = m + start;
    float* vr = v + start;
    float* pr = p + start;
    for (std::size_t k = 0; k < row_size; ++k) {
      const float gk = step.scale * gr[k];
      mr[k] = step.beta1 * mr[k] + one_minus_b1 * gk;
      vr[k] = step.beta2 * vr[k] + one_minus_b2 * gk * gk;
      pr[k] -= step.step * mr[k] / (std::sqrt(vr[k]) + step.epsilon);
    }
  }
}

}  // namespace reference

#if defined(__wasm_simd128__)

void axpy(std::size_t n, float a, const float* x, float* y) {
  const v128_t va = wasm_f32x4_splat(a);
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const v128_t vy =
        wasm_f32x4_add(wasm_v128_load(y + i), wasm_f32x4_mul(va, wasm_v128_load(x + i)));
    wasm_v128_store(y + i, vy);
  }
  for (; i < n; ++i) y[i] += a * x[i];
}

void scale(std::size_t n, float a, float* x) {
  const v128_t va = wasm_f32x4_splat(a);
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(x + i, wasm_f32x4_mul(wasm_v128_load(x + i), va));
  for (; i < n; ++i) x[i] *= a;
}

float dot(std::size_t n, const float* x, const float* y) {
  v128_t acc = wasm_f32x4_splat(0.0f);
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    acc = wasm_f32x4_add(acc, wasm_f32x4_mul(wasm_v128_load(x + i), wasm_v128_load(y + i)));
  }
  float s = (wasm_f32x4_extract_lane(acc, 0) + wasm_f32x4_extract_lane(acc, 1)) +
            (wasm_f32x4_extract_lane(acc, 2) + wasm_f32x4_extract_lane(acc, 3));
  for (; i < n; ++i) s += x[i] * y[i];
  return s;
}

void vecmat(std::size_t rows, std::size_t cols, const float* x, const float* w, const float* bias,
            float* y) {
  for (std::size_t j = 0; j < cols; ++j) y[j] = bias ? bias[j] : 0.0f;
  for (std::size_t i = 0; i < rows; ++i) {
    if (x[i] != 0.0f) axpy(cols, x[i], w + i * cols, y);
  }
}

void matvec(std::size_t rows, std::size_t cols, const float* w, const float* g, float* out) {
  for (std::size_t i = 0; i < rows; ++i) out[i] = dot(cols, w + i * cols, g);
}

void outer_accumulate(std::size_t rows, std::size_t cols, const float* x, const float* g,
                      float* gw) {
  for (std::size_t i = 0; i < rows; ++i) {
    if (x[i] != 0.0f) axpy(cols, x[i], g, gw + i * cols);
  }
}

void sgd_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                     const float* g, float* p, float lr_scale) {
  for (std::size_t r = 0; r < count; ++r) {
    axpy(row_size, -lr_scale, g + r * row_size, p + row_start(rows, r, row_size));
  }
}

void momentum_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                          const float* g, float* m, float* p, const MomentumStep& step) {
  const v128_t mu = wasm_f32x4_splat(step.momentum);
  const v128_t sc = wasm_f32x4_splat(step.scale);
  const v128_t lr = wasm_f32x4_splat(step.learning_rate);
  for (std::size_t r = 0; r < count; ++r) {
    const std::size_t start = row_start(rows, r, row_size);
    const float* gr = g + r * row_size;
    float* mr = m + start;
    float* pr = p + start;
    std::size_t k = 0;
    for (; k + 4 <= row_size; k += 4) {
      const v128_t mk = wasm_f32x4_add(wasm_f32x4_mul(mu, wasm_v128_load(mr + k)),
                                       wasm_f32x4_mul(sc, wasm_v128_load(gr + k)));
      wasm_v128_store(mr + k, mk);
      wasm_v128_store(pr + k, wasm_f32x4_sub(wasm_v128_load(pr + k), wasm_f32x4_mul(lr, mk)));
    }
    for (; k < row_size; ++k) {
      mr[k] = step.momentum * mr[k] + step.scale * gr[k];
      pr[k] -= step.learning_rate * mr[k];
    }
  }
}

void adam_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                      const float* g, float* m, float* v, float* p, const AdamStep& step) {
  const float one_minus_b1 = 1.0f - step.beta1;
  const float one_minus_b2 = 1.0f - step.beta2;
  const v128_t sc = wasm_f32x4_splat(step.scale);
  const v128_t b1 = wasm_f32x4_splat(step.beta1);
  const v128_t b2 = wasm_f32x4_splat(step.beta2);
  const v128_t c1 = wasm_f32x4_splat(one_minus_b1);
  const v128_t c2 = wasm_f32x4_splat(one_minus_b2);
  const v128_t st = wasm_f32x4_splat(step.step);
  const v128_t eps = wasm_f32x4_splat(step.epsilon);
  for (std::size_t r = 0; r < count; ++r) {
    const std::size_t start = row_start(rows, r, row_size);
    const float* gr = g + r * row_size;
    float* mr = m + start;
    float* vr = v + start;
    float* pr = p + start;
    std::size_t k = 0;
    for (; k + 4 <= row_size; k += 4) {
      const v128_t gk = wasm_f32x4_mul(sc, wasm_v128_load(gr + k));
      const v128_t mk =
          wasm_f32x4_add(wasm_f32x4_mul(b1, wasm_v128_load(mr + k)), wasm_f32x4_mul(c1, gk));
      const v128_t vk = wasm_f32x4_add(wasm_f32x4_mul(b2, wasm_v128_load(vr + k)),
                                       wasm_f32x4_mul(wasm_f32x4_mul(c2, gk), gk));
      wasm_v128_store(mr + k, mk);
      wasm_v128_store(vr + k, vk);
      const v128_t delta =
          wasm_f32x4_div(wasm_f32x4_mul(st, mk), wasm_f32x4_add(wasm_f32x4_sqrt(vk), eps));
      wasm_v128_store(pr + k, wasm_f32x4_sub(wasm_v128_load(pr + k), delta));
    }
    for (; k < row_size; ++k) {
      const float gk = step.scale * gr[k];
      mr[k] = step.beta1 * mr[k] + one_minus_b1 * gk;
      vr[k] = step.beta2 * vr[k] + one_minus_b2 * gk * gk;
      pr[k] -= step.step * mr[k] / (std::sqrt(vr[k]) + step.epsilon);
    }
  }
}

#else

void axpy(std::size_t n, float a, const float* x, float* y) { reference::axpy(n, a, x, y); }

void scale(std::size_t n, float a, float* x) { reference::scale(n, a, x); }

float dot(std::size_t n, const float* x, const float* y) { return reference::dot(n, x, y); }

void vecmat(std::size_t rows, std::size_t cols, const float* x, const float* w, const float* bias,
            float* y) {
  reference::vecmat(rows, cols, x, w, bias, y);
}

void matvec(std::size_t rows, std::size_t cols, const float* w, const float* g, float* out) {
  reference::matvec(rows, cols, w, g, out);
}

void outer_accumulate(std::size_t rows, std::size_t cols, const float* x, const float* g,
                      float* gw) {
  reference::outer_accumulate(rows, cols, x, g, gw);
}

void sgd_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                     const float* g, float* p, float lr_scale) {
  reference::sgd_update_rows(rows, count, row_size, g, p, lr_scale);
}

void momentum_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                          const float* g, float* m, float* p, const MomentumStep& step) {
  reference::momentum_update_rows(rows, count, row_size, g, m, p, step);
}

void adam_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                      const float* g, float* m, float* v, float* p, const AdamStep& step) {
  reference::adam_update_rows(rows, count, row_size, g, m, v, p, step);
}

#endif

}  // namespace fedleaf::core::kernels
