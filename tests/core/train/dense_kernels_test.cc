#include <catch2/catch.hpp>

#include <vector>

#include "core/train/dense_kernels.h"
#include "core/train/seeded_random.h"

using namespace fedleaf::core;

namespace {

std::vector<float> random_vector(SeededRandom& rng, std::size_t n, bool with_zeros) {
  std::vector<float> v(n);
  for (float& x : v) x = (with_zeros && rng.below(3) == 0) ? 0.0f : 2.0f * rng.uniform() - 1.0f;
  return v;
}

void check_close(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i);
    CHECK(a[i] == Approx(b[i]).margin(1e-5));
  }
}

}  // namespace

TEST_CASE("kernels_match_their_scalar_reference", "[kernels]") {
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
      check_close(y, y_ref);
      kernels::vecmat(rows, cols, x.data(), w.data(), nullptr, y.data());
      kernels::reference::vecmat(rows, cols, x.data(), w.data(), nullptr, y_ref.data());
      check_close(y, y_ref);

      std::vector<float> out(rows), out_ref(rows);
      kernels::matvec(rows, cols, w.data(), g.data(), out.data());
      kernels::reference::matvec(rows, cols, w.data(), g.data(), out_ref.data());
      check_close(out, out_ref);

      std::vector<float> gw = w, gw_ref = w;
      kernels::outer_accumulate(rows, cols, x.data(), g.data(), gw.data());
      kernels::reference::outer_accumulate(rows, cols, x.data(), g.data(), gw_ref.data());
      check_close(gw, gw_ref);

      std::vector<float> a = bias, a_ref = bias;
      kernels::axpy(cols, 0.5f, g.data(), a.data());
      kernels::reference::axpy(cols, 0.5f, g.data(), a_ref.data());
      check_close(a, a_ref);
      CHECK(kernels::dot(cols, g.data(), bias.data()) ==
            Approx(kernels::reference::dot(cols, g.data(), bias.data())).margin(1e-5));
    }
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
}
