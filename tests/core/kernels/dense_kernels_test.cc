// The training kernels against their scalar references. Each kernel and its reference fix the
// same order of float operations (dense_kernels.h), so they must agree bit for bit; under the
// wasm SIMD build (the same tests run under Node) this checks the wasm_simd128.h kernels.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/data/seeded_random.h"
#include "core/kernels/dense_kernels.h"

using namespace fedleaf::core;

namespace {

std::vector<float> random_vector(SeededRandom& rng, std::size_t n, bool with_zeros) {
  std::vector<float> v(n);
  for (float& x : v) x = (with_zeros && rng.below(3) == 0) ? 0.0f : 2.0f * rng.uniform() - 1.0f;
  return v;
}

std::vector<float> positive_vector(SeededRandom& rng, std::size_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = 0.01f + rng.uniform();
  return v;
}

void check_identical(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i << ": " << a[i] << " vs " << b[i]);
    CHECK(a[i] == b[i]);
  }
}

const std::size_t kRowSizes[] = {1, 2, 3, 4, 5, 7, 8, 16, 33};

}  // namespace

TEST_CASE("dense_kernels_equal_their_scalar_reference_bit_for_bit", "[kernels]") {
  SeededRandom rng(42);
  for (std::size_t rows : {1, 3, 8, 17}) {
    for (std::size_t cols : {1, 2, 4, 7, 16, 33}) {
      INFO("rows " << rows << " cols " << cols);
      const auto x = random_vector(rng, rows, true);
      const auto w = random_vector(rng, rows * cols, false);
      const auto bias = random_vector(rng, cols, false);
      const auto g = random_vector(rng, cols, false);

      std::vector<float> y(cols), y_ref(cols);
      kernels::vecmat(rows, cols, x.data(), w.data(), bias.data(), y.data());
      kernels::reference::vecmat(rows, cols, x.data(), w.data(), bias.data(), y_ref.data());
      check_identical(y, y_ref);
      kernels::vecmat(rows, cols, x.data(), w.data(), nullptr, y.data());
      kernels::reference::vecmat(rows, cols, x.data(), w.data(), nullptr, y_ref.data());
      check_identical(y, y_ref);

      std::vector<float> out(rows), out_ref(rows);
      kernels::matvec(rows, cols, w.data(), g.data(), out.data());
      kernels::reference::matvec(rows, cols, w.data(), g.data(), out_ref.data());
      check_identical(out, out_ref);

      std::vector<float> gw = w, gw_ref = w;
      kernels::outer_accumulate(rows, cols, x.data(), g.data(), gw.data());
      kernels::reference::outer_accumulate(rows, cols, x.data(), g.data(), gw_ref.data());
      check_identical(gw, gw_ref);

      std::vector<float> a = bias, a_ref = bias;
      kernels::axpy(cols, 0.5f, g.data(), a.data());
      kernels::reference::axpy(cols, 0.5f, g.data(), a_ref.data());
      check_identical(a, a_ref);
      kernels::scale(cols, -0.3f, a.data());
      kernels::reference::scale(cols, -0.3f, a_ref.data());
      check_identical(a, a_ref);
      CHECK(kernels::dot(cols, g.data(), bias.data()) ==
            kernels::reference::dot(cols, g.data(), bias.data()));
    }
  }
}

TEST_CASE("batch_dense_kernels_equal_the_per_example_reference_bit_for_bit", "[kernels]") {
  SeededRandom rng(11);
  for (std::size_t n : {1, 5}) {
    for (std::size_t rows : {1, 3, 32}) {
      for (std::size_t cols : {1, 2, 4, 7, 10, 16, 21, 40}) {
        INFO("n " << n << " rows " << rows << " cols " << cols);
        const auto x = random_vector(rng, n * rows, true);
        const auto w = random_vector(rng, rows * cols, false);
        const auto bias = random_vector(rng, cols, false);
        const auto g = random_vector(rng, n * cols, false);

        std::vector<float> y(n * cols), y_ref(n * cols);
        for (const float* b : {bias.data(), static_cast<const float*>(nullptr)}) {
          kernels::vecmat_batch(n, rows, cols, x.data(), w.data(), b, y.data());
          for (std::size_t e = 0; e < n; ++e) {
            kernels::reference::vecmat(rows, cols, x.data() + e * rows, w.data(), b,
                                       y_ref.data() + e * cols);
          }
          check_identical(y, y_ref);
          kernels::reference::vecmat_batch(n, rows, cols, x.data(), w.data(), b, y.data());
          check_identical(y, y_ref);
        }

        std::vector<float> gx(n * rows), gx_ref(n * rows);
        kernels::matvec_batch(n, rows, cols, w.data(), g.data(), gx.data());
        for (std::size_t e = 0; e < n; ++e) {
          kernels::reference::matvec(rows, cols, w.data(), g.data() + e * cols,
                                     gx_ref.data() + e * rows);
        }
        check_identical(gx, gx_ref);
        kernels::reference::matvec_batch(n, rows, cols, w.data(), g.data(), gx.data());
        check_identical(gx, gx_ref);

        std::vector<float> gw = w, gw_ref = w, gw_batch_ref = w;
        kernels::outer_accumulate_batch(n, rows, cols, x.data(), g.data(), gw.data());
        for (std::size_t e = 0; e < n; ++e) {
          kernels::reference::outer_accumulate(rows, cols, x.data() + e * rows, g.data() + e * cols,
                                               gw_ref.data());
        }
        check_identical(gw, gw_ref);
        kernels::reference::outer_accumulate_batch(n, rows, cols, x.data(), g.data(),
                                                   gw_batch_ref.data());
        check_identical(gw_batch_ref, gw_ref);
      }
    }
  }
}

TEST_CASE("embedding_row_kernels_equal_their_scalar_reference_bit_for_bit", "[kernels]") {
  SeededRandom rng(13);
  const std::size_t table_rows = 11;
  for (std::size_t dim : {1, 2, 3, 4, 7, 16, 32, 37, 70}) {
    for (bool weighted : {false, true}) {
      INFO("dim " << dim << (weighted ? " weighted" : ""));
      // Repeated rows: scatter must add into the same row twice, in order.
      const std::vector<std::uint32_t> ids{3, 10, 0, 3, 7};
      auto weights = random_vector(rng, ids.size(), true);
      const float* w = weighted ? weights.data() : nullptr;
      const auto table = random_vector(rng, table_rows * dim, false);

      std::vector<float> out(dim, -1.0f), out_ref(dim, -2.0f);
      kernels::gather_weighted_sum(dim, ids.size(), ids.data(), w, table.data(), out.data());
      kernels::reference::gather_weighted_sum(dim, ids.size(), ids.data(), w, table.data(),
                                              out_ref.data());
      check_identical(out, out_ref);

      const auto g = random_vector(rng, dim, false);
      const auto values0 = random_vector(rng, table_rows * dim, false);
      std::vector<float> values = values0, values_ref = values0;
      kernels::scatter_weighted_add(dim, ids.size(), ids.data(), w, 0.25f, g.data(), values.data());
      kernels::reference::scatter_weighted_add(dim, ids.size(), ids.data(), w, 0.25f, g.data(),
                                               values_ref.data());
      check_identical(values, values_ref);
    }
  }
}

TEST_CASE("optimizer_kernels_equal_their_scalar_reference_bit_for_bit", "[kernels]") {
  SeededRandom rng(7);
  const std::size_t table_rows = 9;
  for (std::size_t row_size : kRowSizes) {
    for (bool sparse : {false, true}) {
      INFO("row_size " << row_size << (sparse ? " row-sparse" : " dense"));
      const std::vector<std::uint32_t> touched{4, 0, 8, 5};
      const std::uint32_t* rows = sparse ? touched.data() : nullptr;
      const std::size_t count = sparse ? touched.size() : table_rows;
      const auto g = random_vector(rng, count * row_size, true);
      const auto p0 = random_vector(rng, table_rows * row_size, false);
      const auto m0 = random_vector(rng, table_rows * row_size, false);
      const auto v0 = positive_vector(rng, table_rows * row_size);

      std::vector<float> p = p0, p_ref = p0;
      kernels::sgd_update_rows(rows, count, row_size, g.data(), p.data(), 0.05f);
      kernels::reference::sgd_update_rows(rows, count, row_size, g.data(), p_ref.data(), 0.05f);
      check_identical(p, p_ref);

      const kernels::MomentumStep momentum{0.1f, 0.9f, 0.75f};
      std::vector<float> m = m0, m_ref = m0;
      p = p0, p_ref = p0;
      kernels::momentum_update_rows(rows, count, row_size, g.data(), m.data(), p.data(), momentum);
      kernels::reference::momentum_update_rows(rows, count, row_size, g.data(), m_ref.data(),
                                               p_ref.data(), momentum);
      check_identical(m, m_ref);
      check_identical(p, p_ref);

      const kernels::AdamStep adam{0.9f, 0.999f, 1e-7f, 0.003f, 0.5f};
      std::vector<float> v = v0, v_ref = v0;
      m = m0, m_ref = m0, p = p0, p_ref = p0;
      kernels::adam_update_rows(rows, count, row_size, g.data(), m.data(), v.data(), row_size,
                                p.data(), adam);
      kernels::reference::adam_update_rows(rows, count, row_size, g.data(), m_ref.data(),
                                           v_ref.data(), row_size, p_ref.data(), adam);
      check_identical(m, m_ref);
      check_identical(v, v_ref);
      check_identical(p, p_ref);
    }
  }
}

TEST_CASE("adam_kernel_on_rows_of_m_then_v_equals_the_reference_on_separate_tables", "[kernels]") {
  // The optimizer's layout (row i: m then v, 2 · row_size floats), rows in a scattered order,
  // more of them (22) than the kernel requests ahead (8 rows): every row is also prefetched.
  SeededRandom rng(11);
  const std::size_t table_rows = 64;
  std::vector<std::uint32_t> touched;
  for (std::uint32_t r = 0; r < table_rows; r += 3) touched.push_back((r * 37) % table_rows);
  for (std::size_t row_size : kRowSizes) {
    INFO("row_size " << row_size);
    const std::size_t count = touched.size();
    const auto g = random_vector(rng, count * row_size, true);
    const auto p0 = random_vector(rng, table_rows * row_size, false);
    const auto m0 = random_vector(rng, table_rows * row_size, false);
    const auto v0 = positive_vector(rng, table_rows * row_size);
    std::vector<float> state(2 * table_rows * row_size);
    for (std::size_t r = 0; r < table_rows; ++r) {
      std::copy_n(m0.data() + r * row_size, row_size, state.data() + 2 * r * row_size);
      std::copy_n(v0.data() + r * row_size, row_size, state.data() + (2 * r + 1) * row_size);
    }
    std::vector<float> p = p0, p_ref = p0, m_ref = m0, v_ref = v0;
    const kernels::AdamStep adam{0.9f, 0.999f, 1e-7f, 0.003f, 0.5f};
    kernels::adam_update_rows(touched.data(), count, row_size, g.data(), state.data(),
                              state.data() + row_size, 2 * row_size, p.data(), adam);
    kernels::reference::adam_update_rows(touched.data(), count, row_size, g.data(), m_ref.data(),
                                         v_ref.data(), row_size, p_ref.data(), adam);
    std::vector<float> m(table_rows * row_size), v(table_rows * row_size);
    for (std::size_t r = 0; r < table_rows; ++r) {
      std::copy_n(state.data() + 2 * r * row_size, row_size, m.data() + r * row_size);
      std::copy_n(state.data() + (2 * r + 1) * row_size, row_size, v.data() + r * row_size);
    }
    check_identical(m, m_ref);
    check_identical(v, v_ref);
    check_identical(p, p_ref);
  }
}

TEST_CASE("reference_kernels_compute_the_textbook_formulas", "[kernels]") {
  const std::vector<float> w{1, 2, 3, 4, 5, 6};  // [2, 3]
  const std::vector<float> x{2, -1};
  std::vector<float> y(3);
  kernels::reference::vecmat(2, 3, x.data(), w.data(), nullptr, y.data());
  CHECK(y == std::vector<float>{-2, -1, 0});
  const std::vector<float> g{1, 0, -1};
  std::vector<float> out(2);
  kernels::reference::matvec(2, 3, w.data(), g.data(), out.data());
  CHECK(out == std::vector<float>{-2, -2});
  std::vector<float> gw(6, 0.0f);
  kernels::reference::outer_accumulate(2, 3, x.data(), g.data(), gw.data());
  CHECK(gw == std::vector<float>{2, 0, -2, -1, 0, 1});
  std::vector<float> s{1, -2, 4};
  kernels::reference::scale(3, 0.5f, s.data());
  CHECK(s == std::vector<float>{0.5f, -1, 2});

  // Rows 2 and 0 of a [3, 2] table, weights 1 and -2 (null weights: all 1).
  const std::vector<float> table{1, 2, 3, 4, 5, 6};
  const std::vector<std::uint32_t> ids{2, 0};
  const std::vector<float> weights{1, -2};
  std::vector<float> bag(2, 9.0f);
  kernels::reference::gather_weighted_sum(2, 2, ids.data(), weights.data(), table.data(),
                                          bag.data());
  CHECK(bag == std::vector<float>{3, 2});
  kernels::reference::gather_weighted_sum(2, 2, ids.data(), nullptr, table.data(), bag.data());
  CHECK(bag == std::vector<float>{6, 8});
  std::vector<float> rows(6, 0.0f);
  const std::vector<float> grad{1, -1};
  kernels::reference::scatter_weighted_add(2, 2, ids.data(), weights.data(), 0.5f, grad.data(),
                                           rows.data());
  CHECK(rows == std::vector<float>{-1, 1, 0, 0, 0.5f, -0.5f});
}

TEST_CASE("reference_dot_sums_four_lanes_then_the_tail", "[kernels]") {
  // Lanes 1e8, 1, -1e8, 1: (1e8 + 1) + (-1e8 + 1) rounds to 1e8 - 1e8 = 0 in float, then the
  // tail adds 0.5. A left-to-right sum would give ((1e8 + 1) - 1e8 + 1) + 0.5 = 1.5.
  const std::vector<float> x{1e8f, 1, -1e8f, 1, 0.5f};
  const std::vector<float> ones(5, 1.0f);
  CHECK(kernels::reference::dot(5, x.data(), ones.data()) == 0.5f);
  CHECK(kernels::dot(5, x.data(), ones.data()) == 0.5f);
}

TEST_CASE("reference_optimizer_kernels_follow_the_update_rules", "[kernels]") {
  const std::vector<std::uint32_t> rows{2, 0};
  const std::vector<float> g{1.0f, -2.0f, 0.5f, 4.0f};  // rows 2 and 0, two values each
  std::vector<float> p{1, 1, 1, 1, 1, 1};
  kernels::reference::sgd_update_rows(rows.data(), 2, 2, g.data(), p.data(), 0.5f);
  CHECK(p == std::vector<float>{0.75f, -1, 1, 1, 0.5f, 2});

  std::vector<float> m{1, 1, 1, 1, 1, 1};
  p.assign(6, 1.0f);
  kernels::reference::momentum_update_rows(rows.data(), 2, 2, g.data(), m.data(), p.data(),
                                           {0.5f, 0.5f, 2.0f});
  // m = 0.5 m + 2 g; p -= 0.5 m on rows 2 and 0 only.
  CHECK(m == std::vector<float>{1.5f, 8.5f, 1, 1, 2.5f, -3.5f});
  CHECK(p == std::vector<float>{0.25f, -3.25f, 1, 1, -0.25f, 2.75f});

  std::vector<float> am(2, 0.0f), av(2, 0.0f), ap(2, 0.0f);
  const std::vector<float> ag{2.0f, -4.0f};
  kernels::reference::adam_update_rows(nullptr, 1, 2, ag.data(), am.data(), av.data(), 2, ap.data(),
                                       {0.5f, 0.75f, 0.0f, 1.0f, 1.0f});
  // m = 0.5 g, v = 0.25 g², p -= m / sqrt(v) = sign(g).
  CHECK(am == std::vector<float>{1.0f, -2.0f});
  CHECK(av == std::vector<float>{1.0f, 4.0f});
  CHECK(ap == std::vector<float>{-1.0f, 1.0f});
}

TEST_CASE("row_start_addresses_rows_directly_or_through_a_row_list", "[kernels]") {
  const std::uint32_t rows[] = {5, 2};

  CHECK(kernels::row_start(nullptr, 3, 4) == 12);
  CHECK(kernels::row_start(rows, 0, 4) == 20);
  CHECK(kernels::row_start(rows, 1, 8) == 16);
}
