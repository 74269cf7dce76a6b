// The inner loops of training, over contiguous row-major float buffers: the one place a
// platform-specific kernel replaces portable code.
//
//   kernels::vecmat(in, units, x, w, bias, y);            // y = bias + x W
//   kernels::matvec(in, units, w, g, gx);                 // gx = W g
//   kernels::outer_accumulate(in, units, x, g, gw);       // gw += x ⊗ g
//   kernels::adam_update_rows(rows, count, row_size, g, m, v, p, adam);   // optimizer rows
//
// `kernels::` are the kernels training runs: with -msimd128 under Emscripten they use
// wasm_simd128.h intrinsics, on x86-64 SSE2 intrinsics, elsewhere portable loops.
// `kernels::reference::` are plain scalar loops with the same contracts; tests check one against
// the other. Buffers must not overlap unless stated.
//
// Every kernel fixes its order of float operations, and the SIMD versions follow it exactly, so
// the two give bit-identical results (and native, wasm SIMD and wasm baseline builds train
// identically): elementwise kernels compute each element with the same expression, and dot
// sums lane k = j mod 4 of the first n - n % 4 products in its own partial sum, adds the four
// partial sums as (s0 + s1) + (s2 + s3), then adds the remaining products in order.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace fedleaf::core::kernels {

// y[0..n) += a * x[0..n). Defined here so that the per-id loops of embedding_bag inline it (a
// call per id on short rows would cost more than the arithmetic).
inline void axpy(std::size_t n, float a, const float* x, float* y) {
  std::size_t i = 0;
#if defined(__wasm_simd128__)
  const v128_t va = wasm_f32x4_splat(a);
  for (; i + 4 <= n; i += 4) {
    wasm_v128_store(
        y + i, wasm_f32x4_add(wasm_v128_load(y + i), wasm_f32x4_mul(va, wasm_v128_load(x + i))));
  }
#endif
  for (; i < n; ++i) y[i] += a * x[i];
}
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

// The same three over a batch of n examples (x [n, rows], y and g [n, cols], gx [n, rows]), equal
// bit for bit to calling the single-example kernel for b = 0, 1, ..., n-1: every output element
// sees the same operations in the same order. They keep blocks of output columns in registers
// across the reduction, so narrow layers (10 units) do not pay a call and a reload per row.
//   vecmat_batch:           y[b, :] = vecmat(x[b, :])
//   matvec_batch:           gx[b, :] = matvec(g[b, :])
//   outer_accumulate_batch: for b in order: gw += x[b, :] ⊗ g[b, :]
void vecmat_batch(std::size_t n, std::size_t rows, std::size_t cols, const float* x, const float* w,
                  const float* bias, float* y);
void matvec_batch(std::size_t n, std::size_t rows, std::size_t cols, const float* w, const float* g,
                  float* gx);
void outer_accumulate_batch(std::size_t n, std::size_t rows, std::size_t cols, const float* x,
                            const float* g, float* gw);

// The rows of an embedding bag, for one example of `count` ids (weights null: all 1).
//   gather_weighted_sum: out[0..dim) = 0, then for j in order: out += weights[j] · table[ids[j], :]
//   scatter_weighted_add: for j in order, with a = weights[j] · scale (skipped when 0):
//                         values[slots[j], :] += a · g[0..dim)
// Each output element sees the operations of axpy in that order.
void gather_weighted_sum(std::size_t dim, std::size_t count, const std::uint32_t* ids,
                         const float* weights, const float* table, float* out);
void scatter_weighted_add(std::size_t dim, std::size_t count, const std::uint32_t* slots,
                          const float* weights, float scale, const float* g, float* values);

// Optimizer steps over `count` rows of `row_size` values: row r of the gradient is
// g[r * row_size ..); it updates row rows[r] of the parameter p and of the state (m, v), or row r
// when rows is null. Adam's state rows are `state_stride` floats apart (m row i at
// m + i · state_stride, v's likewise): row_size for separate m and v tables, 2 · row_size with
// v = m + row_size for one table holding each row's m then its v (the optimizer's layout: a
// row's state is one block, so a scattered row costs one memory page and adjacent cache lines,
// not two of each). With gk = scale · g[k], per element:
//   sgd:      p -= lr_scale · g                       (lr_scale = learning rate · scale)
//   momentum: m = mu · m + gk;  p -= lr · m
//   adam:     m = b1 · m + (1 - b1) · gk;  v = b2 · v + ((1 - b2) · gk) · gk;
//             p -= (step · m) / (sqrt(v) + eps)
// Start of row r of a [*, row_size] buffer addressed through `rows` (null: row r itself).
inline std::size_t row_start(const std::uint32_t* rows, std::size_t r, std::size_t row_size) {
  return (rows != nullptr ? static_cast<std::size_t>(rows[r]) : r) * row_size;
}
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
                      const float* g, float* m, float* v, std::size_t state_stride, float* p,
                      const AdamStep& step);

// The reference kernels (dense_kernels_reference.cc).
namespace reference {
void axpy(std::size_t n, float a, const float* x, float* y);
void scale(std::size_t n, float a, float* x);
float dot(std::size_t n, const float* x, const float* y);
void vecmat(std::size_t rows, std::size_t cols, const float* x, const float* w, const float* bias,
            float* y);
void matvec(std::size_t rows, std::size_t cols, const float* w, const float* g, float* out);
void outer_accumulate(std::size_t rows, std::size_t cols, const float* x, const float* g,
                      float* gw);
void vecmat_batch(std::size_t n, std::size_t rows, std::size_t cols, const float* x, const float* w,
                  const float* bias, float* y);
void matvec_batch(std::size_t n, std::size_t rows, std::size_t cols, const float* w, const float* g,
                  float* gx);
void outer_accumulate_batch(std::size_t n, std::size_t rows, std::size_t cols, const float* x,
                            const float* g, float* gw);
void gather_weighted_sum(std::size_t dim, std::size_t count, const std::uint32_t* ids,
                         const float* weights, const float* table, float* out);
void scatter_weighted_add(std::size_t dim, std::size_t count, const std::uint32_t* slots,
                          const float* weights, float scale, const float* g, float* values);
void sgd_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                     const float* g, float* p, float lr_scale);
void momentum_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                          const float* g, float* m, float* p, const MomentumStep& step);
void adam_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                      const float* g, float* m, float* v, std::size_t state_stride, float* p,
                      const AdamStep& step);
}  // namespace reference

}  // namespace fedleaf::core::kernels
