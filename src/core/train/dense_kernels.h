// The inner loops of training, over contiguous row-major float buffers: the one place a
// platform-specific kernel replaces portable code.
//
//   kernels::vecmat(in, units, x, w, bias, y);            // y = bias + x W
//   kernels::matvec(in, units, w, g, gx);                 // gx = W g
//   kernels::outer_accumulate(in, units, x, g, gw);       // gw += x ⊗ g
//   kernels::adam_update_rows(rows, count, row_size, g, m, v, p, adam);   // optimizer rows
//
// `kernels::` are the kernels training runs: with -msimd128 under Emscripten they use
// wasm_simd128.h intrinsics, elsewhere they are the portable loops (which compilers vectorize
// natively). `kernels::reference::` are plain scalar loops with the same contracts; tests check
// one against the other. Buffers must not overlap unless stated.
//
// Every kernel fixes its order of float operations, and the SIMD versions follow it exactly, so
// the two give bit-identical results (and native, wasm SIMD and wasm baseline builds train
// identically): elementwise kernels compute each element with the same expression, and dot
// sums lane k = j mod 4 of the first n - n % 4 products in its own partial sum, adds the four
// partial sums as (s0 + s1) + (s2 + s3), then adds the remaining products in order.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fedleaf::core::kernels {

// y[0..n) += a * x[0..n)
void axpy(std::size_t n, float a, const float* x, float* y);
// x[0..n) *= a
void scale(std::size_t n, float a, float* x);
// Σ x[i] y[i], in the order stated above.
float dot(std::size_t n, const float* x, const float* y);
// y[0..cols) = bias (or 0 when bias is null) + Σ_i x[i] · w[i, :] for w [rows, cols];
// rows with x[i] == 0 are skipped (relu outputs are often zero).
void vecmat(std::size_t rows, std::size_t cols, const float* x, const float* w, const float* bias,
            float* y);
// out[i] = dot(w[i, :], g) for w [rows, cols].
void matvec(std::size_t rows, std::size_t cols, const float* w, const float* g, float* out);
// gw[i, :] += x[i] · g for w [rows, cols]; rows with x[i] == 0 are skipped.
void outer_accumulate(std::size_t rows, std::size_t cols, const float* x, const float* g,
                      float* gw);

// Optimizer steps over `count` rows of `row_size` values: row r of the gradient is
// g[r * row_size ..); it updates row rows[r] of the parameter p and of the state (m, v), or row r
// when rows is null. With gk = scale · g[k], per element:
//   sgd:      p -= lr_scale · g                       (lr_scale = learning rate · scale)
//   momentum: m = mu · m + gk;  p -= lr · m
//   adam:     m = b1 · m + (1 - b1) · gk;  v = b2 · v + ((1 - b2) · gk) · gk;
//             p -= (step · m) / (sqrt(v) + eps)
struct MomentumStep {
  float learning_rate;
  float momentum;
  float scale;
};
struct AdamStep {
  float beta1;
  float beta2;
  float epsilon;
  float step;  // learning rate · sqrt(1 - β2^t) / (1 - β1^t)
  float scale;
};
void sgd_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                     const float* g, float* p, float lr_scale);
void momentum_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                          const float* g, float* m, float* p, const MomentumStep& step);
void adam_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                      const float* g, float* m, float* v, float* p, const AdamStep& step);

namespace reference {
void axpy(std::size_t n, float a, const float* x, float* y);
void scale(std::size_t n, float a, float* x);
float dot(std::size_t n, const float* x, const float* y);
void vecmat(std::size_t rows, std::size_t cols, const float* x, const float* w, const float* bias,
            float* y);
void matvec(std::size_t rows, std::size_t cols, const float* w, const float* g, float* out);
void outer_accumulate(std::size_t rows, std::size_t cols, const float* x, const float* g,
                      float* gw);
void sgd_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                     const float* g, float* p, float lr_scale);
void momentum_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                          const float* g, float* m, float* p, const MomentumStep& step);
void adam_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                      const float* g, float* m, float* v, float* p, const AdamStep& step);
}  // namespace reference

}  // namespace fedleaf::core::kernels
