#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/train/metrics.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

TEST_CASE("auc_is_the_fraction_of_correctly_ordered_pairs", "[metrics]") {
  CHECK(binary_auc({0.1f, 0.4f, 0.35f, 0.8f}, {0, 0, 1, 1}) == Approx(0.75));
  CHECK(binary_auc({1, 2, 3, 4}, {0, 0, 1, 1}) == 1.0);
  CHECK(binary_auc({4, 3, 2, 1}, {0, 0, 1, 1}) == 0.0);
}

TEST_CASE("auc_counts_ties_as_one_half", "[metrics]") {
  CHECK(binary_auc({0, 0, 0, 0}, {0, 1, 0, 1}) == 0.5);
  // Pairs (neg, pos): (1,1) tie → 0.5, (1,2) → 1, (0,1) → 1, (0,2) → 1: 3.5 / 4.
  CHECK(binary_auc({1, 1, 0, 2}, {0, 1, 0, 1}) == Approx(0.875));
}

TEST_CASE("auc_is_nan_with_one_class_and_rejects_bad_input", "[metrics]") {
  CHECK(std::isnan(binary_auc({1, 2}, {1, 1})));
  CHECK_THROWS_MATCHES(binary_auc({1, 2}, {1}), fedleaf::InvalidInput,
                       MessageContains("2 scores for 1 labels"));
  CHECK_THROWS_MATCHES(binary_auc({1, 2}, {0, 2}), fedleaf::InvalidInput,
                       MessageContains("label 2 is not 0 or 1"));
}

// Regression: a NaN score never left the tie walk, and evaluation hung.
TEST_CASE("auc_rejects_nan_scores_and_orders_infinities", "[metrics]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  CHECK_THROWS_MATCHES(binary_auc({0.5f, nan, 1}, {0, 1, 1}), fedleaf::InvalidInput,
                       MessageContains("the score of example 1 is NaN"));
  CHECK(binary_auc({-inf, inf, inf}, {0, 1, 1}) == 1.0);
  CHECK(binary_auc({inf, inf}, {0, 1}) == 0.5);
}
