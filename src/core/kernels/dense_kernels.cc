#include "core/kernels/dense_kernels.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/kernels/prefetch.h"

#if defined(__SSE2__) && !defined(__wasm_simd128__)
#include <emmintrin.h>
#endif

namespace fedleaf::core::kernels {
namespace {

// Adam's rows are random rows of the table and of its state (on workload (c), 20 MB of p, m and
// v): each row's lines are requested this many rows ahead. Native: +35-50% on (c). wasm has no
// prefetch instruction and loads in its place lost (see prefetch.h): there this does nothing.
constexpr std::size_t kAdamRowsAhead = 8;
constexpr std::size_t kFloatsPerLine = 16;  // 64-byte cache lines

// Four floats: a wasm SIMD register, an SSE2 register (every x86-64 CPU), or four scalars
// (which compilers vectorize where they can). The kernels below are written once over F4, so
// every build runs the same IEEE single-precision operations per element: add, sub, mul, div and
// sqrt are correctly rounded in all three, and nothing is fused.
#if defined(__wasm_simd128__)
struct F4 {
  v128_t v;
};
inline F4 load4(const float* p) { return {wasm_v128_load(p)}; }
inline void store4(float* p, F4 a) { wasm_v128_store(p, a.v); }
inline F4 splat4(float a) { return {wasm_f32x4_splat(a)}; }
inline F4 add4(F4 a, F4 b) { return {wasm_f32x4_add(a.v, b.v)}; }
inline F4 sub4(F4 a, F4 b) { return {wasm_f32x4_sub(a.v, b.v)}; }
inline F4 mul4(F4 a, F4 b) { return {wasm_f32x4_mul(a.v, b.v)}; }
inline F4 div4(F4 a, F4 b) { return {wasm_f32x4_div(a.v, b.v)}; }
inline F4 sqrt4(F4 a) { return {wasm_f32x4_sqrt(a.v)}; }
inline float lane_sum4(F4 a) {
  return (wasm_f32x4_extract_lane(a.v, 0) + wasm_f32x4_extract_lane(a.v, 1)) +
         (wasm_f32x4_extract_lane(a.v, 2) + wasm_f32x4_extract_lane(a.v, 3));
}
#elif defined(__SSE2__)
struct F4 {
  __m128 v;
};
inline F4 load4(const float* p) { return {_mm_loadu_ps(p)}; }
inline void store4(float* p, F4 a) { _mm_storeu_ps(p, a.v); }
inline F4 splat4(float a) { return {_mm_set1_ps(a)}; }
inline F4 add4(F4 a, F4 b) { return {_mm_add_ps(a.v, b.v)}; }
inline F4 sub4(F4 a, F4 b) { return {_mm_sub_ps(a.v, b.v)}; }
inline F4 mul4(F4 a, F4 b) { return {_mm_mul_ps(a.v, b.v)}; }
inline F4 div4(F4 a, F4 b) { return {_mm_div_ps(a.v, b.v)}; }
inline F4 sqrt4(F4 a) { return {_mm_sqrt_ps(a.v)}; }
inline float lane_sum4(F4 a) {
  float l[4];
  _mm_storeu_ps(l, a.v);
  return (l[0] + l[1]) + (l[2] + l[3]);
}
#else
struct F4 {
  float v[4];
};
inline F4 load4(const float* p) {
  F4 a;
  std::memcpy(a.v, p, sizeof a.v);
  return a;
}
inline void store4(float* p, F4 a) { std::memcpy(p, a.v, sizeof a.v); }
inline F4 splat4(float a) { return {{a, a, a, a}}; }
template <class Op>
inline F4 lanes4(F4 a, F4 b, Op op) {
  for (int k = 0; k < 4; ++k) a.v[k] = op(a.v[k], b.v[k]);
  return a;
}
inline F4 add4(F4 a, F4 b) {
  return lanes4(a, b, [](float x, float y) { return x + y; });
}
inline F4 sub4(F4 a, F4 b) {
  return lanes4(a, b, [](float x, float y) { return x - y; });
}
inline F4 mul4(F4 a, F4 b) {
  return lanes4(a, b, [](float x, float y) { return x * y; });
}
inline F4 div4(F4 a, F4 b) {
  return lanes4(a, b, [](float x, float y) { return x / y; });
}
inline F4 sqrt4(F4 a) {
  return lanes4(a, a, [](float x, float) { return std::sqrt(x); });
}
inline float lane_sum4(F4 a) { return (a.v[0] + a.v[1]) + (a.v[2] + a.v[3]); }
#endif
// acc + a · b, rounded after the product and after the sum (no fused multiply-add).
inline F4 add_product4(F4 acc, F4 a, F4 b) { return add4(acc, mul4(a, b)); }

// dot in the order of dense_kernels.h, over F4.
inline float dot4(std::size_t n, const float* x, const float* y) {
  F4 acc = splat4(0.0f);
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) acc = add_product4(acc, load4(x + i), load4(y + i));
  float s = lane_sum4(acc);
  for (; i < n; ++i) s += x[i] * y[i];
  return s;
}

// Columns [j0, j0 + 4 NV) of vecmat for one example, held in registers across the rows.
template <int NV>
void vecmat_columns(std::size_t rows, std::size_t cols, std::size_t j0, const float* x,
                    const float* w, const float* bias, float* y) {
  F4 acc[NV];
  for (int k = 0; k < NV; ++k) acc[k] = bias ? load4(bias + j0 + 4 * k) : splat4(0.0f);
  for (std::size_t i = 0; i < rows; ++i) {
    if (x[i] == 0.0f) continue;
    const F4 xi = splat4(x[i]);
    const float* wi = w + i * cols + j0;
    for (int k = 0; k < NV; ++k) acc[k] = add_product4(acc[k], xi, load4(wi + 4 * k));
  }
  for (int k = 0; k < NV; ++k) store4(y + j0 + 4 * k, acc[k]);
}

// Columns [j0, j0 + 4 NV) of row i of gw, accumulated over the batch in example order.
template <int NV>
void outer_accumulate_columns(std::size_t n, std::size_t rows, std::size_t cols, std::size_t i,
                              std::size_t j0, const float* x, const float* g, float* gw) {
  float* gwi = gw + i * cols + j0;
  F4 acc[NV];
  for (int k = 0; k < NV; ++k) acc[k] = load4(gwi + 4 * k);
  for (std::size_t b = 0; b < n; ++b) {
    const float xb = x[b * rows + i];
    if (xb == 0.0f) continue;
    const F4 xv = splat4(xb);
    const float* gb = g + b * cols + j0;
    for (int k = 0; k < NV; ++k) acc[k] = add_product4(acc[k], xv, load4(gb + 4 * k));
  }
  for (int k = 0; k < NV; ++k) store4(gwi + 4 * k, acc[k]);
}

// block(nv) for the runtime nv in [1, MaxNV] (nothing for 0), with nv as a compile-time constant.
template <int MaxNV, class Block>
void with_vector_count(std::size_t nv, std::size_t j0, Block& block) {
  if constexpr (MaxNV > 0) {
    if (nv == MaxNV) {
      block(std::integral_constant<int, MaxNV>{}, j0);
    } else {
      with_vector_count<MaxNV - 1>(nv, j0, block);
    }
  }
}

// Calls block(NV, j0) over [0, cols) in blocks of 4 MaxNV columns, then one block of the
// remaining whole vectors; returns the first column left (cols - cols % 4).
template <int MaxNV, class Block>
std::size_t for_column_blocks(std::size_t cols, Block&& block) {
  std::size_t j0 = 0;
  for (; j0 + 4 * MaxNV <= cols; j0 += 4 * MaxNV) {
    block(std::integral_constant<int, MaxNV>{}, j0);
  }
  with_vector_count<MaxNV - 1>((cols - j0) / 4, j0, block);
  return cols - cols % 4;
}

template <int NV>
void gather_columns(std::size_t dim, std::size_t j0, std::size_t count, const std::uint32_t* ids,
                    const float* weights, const float* table, float* out) {
  F4 acc[NV];
  for (int k = 0; k < NV; ++k) acc[k] = splat4(0.0f);
  for (std::size_t j = 0; j < count; ++j) {
    const float* t = table + static_cast<std::size_t>(ids[j]) * dim + j0;
    const F4 w = splat4(weights ? weights[j] : 1.0f);
    for (int k = 0; k < NV; ++k) acc[k] = add_product4(acc[k], w, load4(t + 4 * k));
  }
  for (int k = 0; k < NV; ++k) store4(out + j0 + 4 * k, acc[k]);
}

template <int NV>
void scatter_columns(std::size_t dim, std::size_t j0, std::size_t count, const std::uint32_t* slots,
                     const float* weights, float scale, const float* g, float* values) {
  F4 gv[NV];
  for (int k = 0; k < NV; ++k) gv[k] = load4(g + j0 + 4 * k);
  for (std::size_t j = 0; j < count; ++j) {
    const float a = (weights ? weights[j] : 1.0f) * scale;
    if (a == 0.0f) continue;
    const F4 av = splat4(a);
    float* v = values + static_cast<std::size_t>(slots[j]) * dim + j0;
    for (int k = 0; k < NV; ++k) store4(v + 4 * k, add_product4(load4(v + 4 * k), av, gv[k]));
  }
}

}  // namespace

void vecmat_batch(std::size_t n, std::size_t rows, std::size_t cols, const float* x, const float* w,
                  const float* bias, float* y) {
  for (std::size_t b = 0; b < n; ++b) {
    const float* xb = x + b * rows;
    float* yb = y + b * cols;
    const std::size_t tail = for_column_blocks<4>(cols, [&](auto nv, std::size_t j0) {
      vecmat_columns<decltype(nv)::value>(rows, cols, j0, xb, w, bias, yb);
    });
    for (std::size_t j = tail; j < cols; ++j) {
      float s = bias ? bias[j] : 0.0f;
      for (std::size_t i = 0; i < rows; ++i) {
        if (xb[i] != 0.0f) s += xb[i] * w[i * cols + j];
      }
      yb[j] = s;
    }
  }
}

void gather_weighted_sum(std::size_t dim, std::size_t count, const std::uint32_t* ids,
                         const float* weights, const float* table, float* out) {
  const std::size_t tail = for_column_blocks<8>(dim, [&](auto nv, std::size_t j0) {
    gather_columns<decltype(nv)::value>(dim, j0, count, ids, weights, table, out);
  });
  for (std::size_t k = tail; k < dim; ++k) {
    float s = 0.0f;
    for (std::size_t j = 0; j < count; ++j) {
      s += (weights ? weights[j] : 1.0f) * table[static_cast<std::size_t>(ids[j]) * dim + k];
    }
    out[k] = s;
  }
}

void scatter_weighted_add(std::size_t dim, std::size_t count, const std::uint32_t* slots,
                          const float* weights, float scale, const float* g, float* values) {
  const std::size_t tail = for_column_blocks<8>(dim, [&](auto nv, std::size_t j0) {
    scatter_columns<decltype(nv)::value>(dim, j0, count, slots, weights, scale, g, values);
  });
  if (tail == dim) return;
  for (std::size_t j = 0; j < count; ++j) {
    const float a = (weights ? weights[j] : 1.0f) * scale;
    if (a == 0.0f) continue;
    float* v = values + static_cast<std::size_t>(slots[j]) * dim;
    for (std::size_t k = tail; k < dim; ++k) v[k] += a * g[k];
  }
}

void matvec_batch(std::size_t n, std::size_t rows, std::size_t cols, const float* w, const float* g,
                  float* gx) {
  for (std::size_t b = 0; b < n; ++b) {
    for (std::size_t i = 0; i < rows; ++i)
      gx[b * rows + i] = dot4(cols, w + i * cols, g + b * cols);
  }
}

void outer_accumulate_batch(std::size_t n, std::size_t rows, std::size_t cols, const float* x,
                            const float* g, float* gw) {
  for (std::size_t i = 0; i < rows; ++i) {
    const std::size_t tail = for_column_blocks<4>(cols, [&](auto nv, std::size_t j0) {
      outer_accumulate_columns<decltype(nv)::value>(n, rows, cols, i, j0, x, g, gw);
    });
    for (std::size_t j = tail; j < cols; ++j) {
      float s = gw[i * cols + j];
      for (std::size_t b = 0; b < n; ++b) {
        const float xb = x[b * rows + i];
        if (xb != 0.0f) s += xb * g[b * cols + j];
      }
      gw[i * cols + j] = s;
    }
  }
}

void scale(std::size_t n, float a, float* x) {
  const F4 va = splat4(a);
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) store4(x + i, mul4(load4(x + i), va));
  for (; i < n; ++i) x[i] *= a;
}

float dot(std::size_t n, const float* x, const float* y) { return dot4(n, x, y); }

void vecmat(std::size_t rows, std::size_t cols, const float* x, const float* w, const float* bias,
            float* y) {
  for (std::size_t j = 0; j < cols; ++j) y[j] = bias ? bias[j] : 0.0f;
  for (std::size_t i = 0; i < rows; ++i) {
    if (x[i] != 0.0f) axpy(cols, x[i], w + i * cols, y);
  }
}

void matvec(std::size_t rows, std::size_t cols, const float* w, const float* g, float* out) {
  for (std::size_t i = 0; i < rows; ++i) out[i] = dot4(cols, w + i * cols, g);
}

void outer_accumulate(std::size_t rows, std::size_t cols, const float* x, const float* g,
                      float* gw) {
  for (std::size_t i = 0; i < rows; ++i) {
    if (x[i] != 0.0f) axpy(cols, x[i], g, gw + i * cols);
  }
}

void sgd_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                     const float* g, float* p, float lr_scale) {
  const F4 lr = splat4(lr_scale);
  for (std::size_t r = 0; r < count; ++r) {
    const float* gr = g + r * row_size;
    float* pr = p + row_start(rows, r, row_size);
    std::size_t k = 0;
    for (; k + 4 <= row_size; k += 4) store4(pr + k, sub4(load4(pr + k), mul4(lr, load4(gr + k))));
    for (; k < row_size; ++k) pr[k] -= lr_scale * gr[k];
  }
}

void momentum_update_rows(const std::uint32_t* rows, std::size_t count, std::size_t row_size,
                          const float* g, float* m, float* p, const MomentumStep& step) {
  const F4 mu = splat4(step.momentum);
  const F4 sc = splat4(step.scale);
  const F4 lr = splat4(step.learning_rate);
  for (std::size_t r = 0; r < count; ++r) {
    const std::size_t start = row_start(rows, r, row_size);
    const float* gr = g + r * row_size;
    float* mr = m + start;
    float* pr = p + start;
    std::size_t k = 0;
    for (; k + 4 <= row_size; k += 4) {
      const F4 mk = add4(mul4(mu, load4(mr + k)), mul4(sc, load4(gr + k)));
      store4(mr + k, mk);
      store4(pr + k, sub4(load4(pr + k), mul4(lr, mk)));
    }
    for (; k < row_size; ++k) {
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
  const F4 sc = splat4(step.scale);
  const F4 b1 = splat4(step.beta1);
  const F4 b2 = splat4(step.beta2);
  const F4 c1 = splat4(one_minus_b1);
  const F4 c2 = splat4(one_minus_b2);
  const F4 st = splat4(step.step);
  const F4 eps = splat4(step.epsilon);
  for (std::size_t r = 0; r < count; ++r) {
    if (rows != nullptr && r + kAdamRowsAhead < count) {
      const float* state_ahead = m + row_start(rows, r + kAdamRowsAhead, state_stride);
      const float* p_ahead = p + row_start(rows, r + kAdamRowsAhead, row_size);
      for (std::size_t k = 0; k < state_stride; k += kFloatsPerLine) prefetch_line(state_ahead + k);
      for (std::size_t k = 0; k < row_size; k += kFloatsPerLine) prefetch_line(p_ahead + k);
    }
    const std::size_t state = row_start(rows, r, state_stride);
    const float* gr = g + r * row_size;
    float* mr = m + state;
    float* vr = v + state;
    float* pr = p + row_start(rows, r, row_size);
    std::size_t k = 0;
    for (; k + 4 <= row_size; k += 4) {
      const F4 gk = mul4(sc, load4(gr + k));
      const F4 mk = add4(mul4(b1, load4(mr + k)), mul4(c1, gk));
      const F4 vk = add4(mul4(b2, load4(vr + k)), mul4(mul4(c2, gk), gk));
      store4(mr + k, mk);
      store4(vr + k, vk);
      store4(pr + k, sub4(load4(pr + k), div4(mul4(st, mk), add4(sqrt4(vk), eps))));
    }
    for (; k < row_size; ++k) {
      const float gk = step.scale * gr[k];
      mr[k] = step.beta1 * mr[k] + one_minus_b1 * gk;
      vr[k] = step.beta2 * vr[k] + one_minus_b2 * gk * gk;
      pr[k] -= step.step * mr[k] / (std::sqrt(vr[k]) + step.epsilon);
    }
  }
}

}  // namespace fedleaf::core::kernels
