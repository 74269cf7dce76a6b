#include "core/train/dense_kernels.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace fedleaf::core::kernels {

namespace reference {

void axpy(std::size_t n, float a, const float* x, float* y) {
  for (std::size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

float dot(std::size_t n, const float* x, const float* y) {
  float s = 0.0f;
  for (std::size_t i = 0; i < n; ++i) s += x[i] * y[i];
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
  for (std::size_t i = 0; i < rows; ++i) {
    float s = 0.0f;
    for (std::size_t j = 0; j < cols; ++j) s += w[i * cols + j] * g[j];
    out[i] = s;
  }
}

void outer_accumulate(std::size_t rows, std::size_t cols, const float* x, const float* g,
                      float* gw) {
  for (std::size_t i = 0; i < rows; ++i) {
    if (x[i] == 0.0f) continue;
    for (std::size_t j = 0; j < cols; ++j) gw[i * cols + j] += x[i] * g[j];
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

#else

void axpy(std::size_t n, float a, const float* x, float* y) { reference::axpy(n, a, x, y); }

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

#endif

}  // namespace fedleaf::core::kernels
