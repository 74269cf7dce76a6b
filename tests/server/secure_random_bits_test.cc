#include "server/util/secure_random_bits.h"

#include <bitset>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <set>

#include "core/privacy/discrete_gaussian.h"

using fedleaf::server::SecureRandomBits;

TEST_CASE("secure_random_bits_gives_balanced_distinct_words") {
  SecureRandomBits bits;
  const int n = 20'000;  // several refills of the 64-word buffer
  std::set<std::uint64_t> seen;
  std::int64_t ones = 0;
  std::int64_t low_bit = 0;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t w = bits.next();
    seen.insert(w);
    ones += static_cast<std::int64_t>(std::bitset<64>(w).count());
    low_bit += static_cast<std::int64_t>(w & 1);
  }
  CHECK(seen.size() == static_cast<std::size_t>(n));  // a repeat has probability ~1e-11
  // Half of the 1.28e6 bits set, within 5 standard deviations (400).
  CHECK(std::abs(static_cast<double>(ones) - 32.0 * n) < 5 * std::sqrt(16.0 * n));
  CHECK(std::abs(static_cast<double>(low_bit) - n / 2.0) < 5 * std::sqrt(n / 4.0));
}

TEST_CASE("secure_random_bits_instances_are_independent") {
  SecureRandomBits a;
  SecureRandomBits b;
  int equal = 0;
  for (int i = 0; i < 100; ++i) equal += a.next() == b.next() ? 1 : 0;
  CHECK(equal == 0);
}

TEST_CASE("secure_random_bits_drive_the_discrete_gaussian") {
  SecureRandomBits bits;
  const fedleaf::core::DiscreteGaussian noise(100, 1);
  const int n = 50'000;
  double sum = 0;
  double sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const auto y = static_cast<double>(noise.sample(bits));
    sum += y;
    sum_sq += y * y;
  }
  // Mean 0, variance 100 (the discrete Gaussian's is 100 to 1e-80 at this sigma): 5 standard
  // errors (the variance's is 100 sqrt(2 / n)).
  CHECK(std::abs(sum / n) < 5 * 10 / std::sqrt(n));
  CHECK(std::abs(sum_sq / n - 100) < 5 * 100 * std::sqrt(2.0 / n));
}
