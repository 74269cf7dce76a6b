#include "core/privacy/zcdp_conversion.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "tests/core/error_matchers.h"

using fedleaf::core::epsilon_from_zcdp;
using fedleaf::test::MessageContains;

TEST_CASE("zcdp_conversion_reproduces_opendp_test_value") {
  // OpenDP's test of its zCDP -> approximate DP conversion: rho = (1/4)^2 / 2, delta = 1e-3.
  CHECK(epsilon_from_zcdp(0.25 * 0.25 / 2, 1e-3) == Approx(0.6880024554878086).epsilon(1e-12));
}

TEST_CASE("zcdp_conversion_is_the_minimum_over_renyi_orders") {
  // CKS 2020 Proposition 12 at every order alpha of a fine grid: the conversion is their minimum.
  for (double rho : {0.001, 0.03125, 0.81, 20.0}) {
    for (double delta : {1e-3, 1e-10}) {
      double best = HUGE_VAL;
      for (double alpha = 1.0005; alpha < 2000; alpha *= 1.0005) {
        best = std::fmin(best, alpha * rho + (std::log(1 / delta) - std::log(alpha)) / (alpha - 1) +
                                   std::log1p(-1 / alpha));
      }
      const double eps = epsilon_from_zcdp(rho, delta);
      CHECK(eps <= best + 1e-12);
      CHECK(eps >= best - 1e-6 * best);
    }
  }
}

TEST_CASE("zcdp_conversion_is_tighter_than_the_simple_bound") {
  for (double rho : {0.01, 0.1, 0.81, 5.0}) {
    for (double delta : {1e-3, 1e-6, 1e-10}) {
      const double simple = rho + 2 * std::sqrt(rho * std::log(1 / delta));
      const double tight = epsilon_from_zcdp(rho, delta);
      CHECK(tight < simple);
      CHECK(tight > 0);
    }
  }
}

TEST_CASE("zcdp_conversion_grows_with_rho_and_shrinks_with_delta") {
  double previous = 0;
  for (double rho : {1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0}) {
    const double eps = epsilon_from_zcdp(rho, 1e-6);
    CHECK(eps > previous);
    previous = eps;
  }
  CHECK(epsilon_from_zcdp(0.5, 1e-9) > epsilon_from_zcdp(0.5, 1e-5));
  CHECK(epsilon_from_zcdp(0, 1e-5) == 0);
}

TEST_CASE("zcdp_conversion_rejects_bad_rho_and_delta") {
  CHECK_THROWS_MATCHES(epsilon_from_zcdp(-1, 1e-5), fedleaf::InvalidInput, MessageContains("rho"));
  CHECK_THROWS_MATCHES(epsilon_from_zcdp(std::numeric_limits<double>::infinity(), 1e-5),
                       fedleaf::InvalidInput, MessageContains("rho"));
  for (double delta : {0.0, 1.0, -0.1, 2.0, std::nan("")}) {
    CHECK_THROWS_MATCHES(epsilon_from_zcdp(1, delta), fedleaf::InvalidInput,
                         MessageContains("delta: must be in (0, 1)"));
  }
  CHECK_THROWS_MATCHES(epsilon_from_zcdp(1, 0, "privacy.delta"), fedleaf::InvalidInput,
                       MessageContains("privacy.delta:"));
}
