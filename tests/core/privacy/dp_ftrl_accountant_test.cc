#include "core/privacy/dp_ftrl_accountant.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "core/privacy/zcdp_conversion.h"
#include "tests/core/error_matchers.h"

using fedleaf::core::DpFtrlAccountant;
using fedleaf::test::MessageContains;

TEST_CASE("dp_ftrl_accountant_reproduces_the_gboard_spanish_model_within_1_percent") {
  // Noise multiplier 7.0, 2000 rounds, at most 6 participations with 313 rounds between two:
  // published rho = 0.81 zCDP and epsilon = 8.90 at delta = 1e-10.
  const DpFtrlAccountant accountant({2000, 6, 313});
  CHECK(accountant.limits().min_separation == 313);
  CHECK(accountant.squared_sensitivity() == 79);
  CHECK(accountant.rho(7.0) == Approx(0.81).epsilon(0.01));
  CHECK(accountant.epsilon(7.0, 1e-10) == Approx(8.90).epsilon(0.01));
  CHECK(accountant.noise_multiplier_for(8.90, 1e-10) == Approx(7.0).epsilon(0.01));
}

TEST_CASE("dp_ftrl_accountant_counts_separation_as_rounds_strictly_between") {
  // Published with min_separation 313; 312 lets a device come back one round earlier and can only
  // cost more, 2000 / 314 < 6.4 keeps 6 participations possible either way.
  const DpFtrlAccountant published({2000, 6, 313});
  const DpFtrlAccountant one_less({2000, 6, 312});
  CHECK(one_less.rho(7.0) >= published.rho(7.0));
  // Two rounds, separation 1: the device takes part once (a leaf and the root: S^2 = 2); with
  // separation 0 in both (S^2 = 6).
  CHECK(DpFtrlAccountant({2, 2, 1}).rho(1.0) == Approx(1.0));
  CHECK(DpFtrlAccountant({2, 2, 0}).rho(1.0) == Approx(3.0));
}

TEST_CASE("dp_ftrl_accountant_composes_the_nodes_of_a_path") {
  // One participation touches floor(log2 T) + 1 nodes, each a Gaussian mechanism of sensitivity
  // 1: zCDP composes by addition (Bun and Steinke 2016, Lemma 2.3).
  const double sigma = 3.0;
  const double one_node = 1 / (2 * sigma * sigma);
  CHECK(DpFtrlAccountant({1000, 1, 0}).rho(sigma) == Approx(10 * one_node));
  CHECK(DpFtrlAccountant({1024, 1, 0}).rho(sigma) == Approx(11 * one_node));
  // Two far-apart participations in two separate trees of a forest (3 = 2 + 1 leaves, rounds
  // 0 and 2): the nodes of both paths, 2 + 1.
  CHECK(DpFtrlAccountant({3, 2, 1}).rho(sigma) == Approx(3 * one_node));
}

TEST_CASE("dp_ftrl_accountant_is_monotone") {
  const DpFtrlAccountant accountant({500, 5, 20});
  double previous = 1e300;
  for (double noise : {0.5, 1.0, 2.0, 4.0, 8.0, 16.0}) {
    const double eps = accountant.epsilon(noise, 1e-6);
    CHECK(eps < previous);
    previous = eps;
  }
  previous = 0;
  for (std::int64_t r = 1; r <= 500; r += 7) {
    const double eps = accountant.epsilon(2.0, 1e-6, r);
    CHECK(eps >= previous);
    previous = eps;
  }
  CHECK(accountant.epsilon(2.0, 1e-6, 500) == accountant.epsilon(2.0, 1e-6));
  CHECK(DpFtrlAccountant({500, 6, 20}).epsilon(2.0, 1e-6) >= accountant.epsilon(2.0, 1e-6));
  CHECK(DpFtrlAccountant({500, 5, 40}).epsilon(2.0, 1e-6) <= accountant.epsilon(2.0, 1e-6));
  CHECK(DpFtrlAccountant({1000, 5, 20}).epsilon(2.0, 1e-6) >= accountant.epsilon(2.0, 1e-6));
}

TEST_CASE("dp_ftrl_accountant_finds_the_least_noise_for_a_target_epsilon") {
  const DpFtrlAccountant accountant({1000, 10, 50});
  for (double target : {0.5, 2.0, 8.0, 30.0}) {
    const double noise = accountant.noise_multiplier_for(target, 1e-8);
    CHECK(accountant.epsilon(noise, 1e-8) <= target);
    CHECK(accountant.epsilon(noise * (1 - 1e-6), 1e-8) > target);
  }
}

TEST_CASE("dp_ftrl_accountant_rejects_bad_settings_naming_the_field") {
  CHECK_THROWS_MATCHES(DpFtrlAccountant({0, 1, 0}), fedleaf::InvalidInput,
                       MessageContains("rounds: must be an integer in [1"));
  const DpFtrlAccountant accountant({100, 2, 3});
  for (double noise : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    CHECK_THROWS_MATCHES(accountant.rho(noise), fedleaf::InvalidInput,
                         MessageContains("noise_multiplier: must be a finite number > 0"));
  }
  CHECK_THROWS_MATCHES(accountant.epsilon(1.0, 1.0), fedleaf::InvalidInput,
                       MessageContains("delta: must be in (0, 1)"));
  CHECK_THROWS_MATCHES(accountant.epsilon(1.0, 1e-5, 101), fedleaf::InvalidInput,
                       MessageContains("after_rounds: must be in [0, 100]"));
  CHECK_THROWS_MATCHES(accountant.noise_multiplier_for(0, 1e-5), fedleaf::InvalidInput,
                       MessageContains("target_epsilon: must be a finite number > 0"));
  CHECK_THROWS_MATCHES(accountant.noise_multiplier_for(1, 0), fedleaf::InvalidInput,
                       MessageContains("delta"));
}
