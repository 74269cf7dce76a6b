#include "core/privacy/grid_gaussian.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "tests/core/error_matchers.h"
#include "tests/core/privacy/seeded_bits.h"

using fedleaf::core::GridGaussian;
using fedleaf::test::MessageContains;
using fedleaf::test::SeededBits;

TEST_CASE("grid_gaussian_picks_a_power_of_two_grid_and_never_less_noise") {
  for (double sigma : {7.0, 0.07, 1e-6, 3.5e4, 1.0, 4096.0, 0.1 * 7.0}) {
    INFO("sigma " << sigma);
    const GridGaussian noise(sigma);
    int exponent = 0;
    CHECK(std::frexp(noise.grid(), &exponent) == 0.5);  // a power of two
    CHECK(noise.scale() >= 4096);
    CHECK(noise.scale() <= 8192);
    CHECK(noise.sigma() >= sigma);
    CHECK(noise.sigma() < sigma * (1 + 1.0 / 4096));
  }
}

TEST_CASE("grid_gaussian_draws_have_the_scale_in_grid_units") {
  const GridGaussian noise(7.0);
  SeededBits bits(11);
  const int n = 100'000;
  double sum = 0;
  double sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const auto units = static_cast<double>(noise.sample_units(bits));
    sum += units;
    sum_sq += units * units;
  }
  const auto scale = static_cast<double>(noise.scale());
  CHECK(std::abs(sum / n) < 5 * scale / std::sqrt(n));
  CHECK(std::sqrt(sum_sq / n) == Approx(scale).epsilon(0.02));
}

TEST_CASE("grid_gaussian_rejects_a_sigma_that_is_not_a_positive_finite_number") {
  for (double sigma : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity(), 1e-310}) {
    CHECK_THROWS_MATCHES(GridGaussian(sigma), fedleaf::InvalidInput,
                         MessageContains("sigma: must be a finite number above 2^-1000"));
  }
}
