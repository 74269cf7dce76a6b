// The dense inner loops of training, over contiguous row-major float buffers: the one place a
// platform-specific kernel replaces portable code.
//
//   kernels::vecmat(in, units, x, w, bias, y);            // y = bias + x W
//   kernels::matvec(in, units, w, g, gx);                 // gx = W g
//   kernels::outer_accumulate(in, units, x, g, gw);       // gw += x ⊗ g
//
// `kernels::` are the kernels training runs: with -msimd128 under Emscripten they use
// wasm_simd128.h intrinsics, elsewhere they are the portable loops (which compilers vectorize
// natively). `kernels::reference::` are plain scalar loops with the same contracts; tests check
// one against the other. Buffers must not overlap unless stated. Summation order may differ
// between the two (within float rounding).
#pragma once

#include <cstddef>

namespace fedleaf::core::kernels {

// y[0..n) += a * x[0..n)
void axpy(std::size_t n, float a, const float* x, float* y);
// Σ x[i] y[i]
float dot(std::size_t n, const float* x, const float* y);
// y[0..cols) = bias (or 0 when bias is null) + Σ_i x[i] · w[i, :] for w [rows, cols];
// rows with x[i] == 0 are skipped (relu outputs are often zero).
void vecmat(std::size_t rows, std::size_t cols, const float* x, const float* w, const float* bias,
            float* y);
// out[i] = Σ_j w[i, j] g[j] for w [rows, cols].
void matvec(std::size_t rows, std::size_t cols, const float* w, const float* g, float* out);
// gw[i, :] += x[i] · g for w [rows, cols]; rows with x[i] == 0 are skipped.
void outer_accumulate(std::size_t rows, std::size_t cols, const float* x, const float* g,
                      float* gw);

namespace reference {
void axpy(std::size_t n, float a, const float* x, float* y);
float dot(std::size_t n, const float* x, const float* y);
void vecmat(std::size_t rows, std::size_t cols, const float* x, const float* w, const float* bias,
            float* y);
void matvec(std::size_t rows, std::size_t cols, const float* w, const float* g, float* out);
void outer_accumulate(std::size_t rows, std::size_t cols, const float* x, const float* g,
                      float* gw);
}  // namespace reference

}  // namespace fedleaf::core::kernels
