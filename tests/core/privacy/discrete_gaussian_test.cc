#include "core/privacy/discrete_gaussian.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "tests/core/error_matchers.h"
#include "tests/core/privacy/seeded_bits.h"

using fedleaf::core::DiscreteGaussian;
using fedleaf::test::MessageContains;
using fedleaf::test::SeededBits;

namespace {

// The exact pmf of N_Z(0, sigma^2) on [-bound, bound], normalised over that range (the mass
// beyond is below 1e-30 for bound = 12 sigma + 10).
std::map<std::int64_t, long double> exact_pmf(long double sigma_squared) {
  const auto bound = static_cast<std::int64_t>(12 * std::sqrt(sigma_squared) + 10);
  std::map<std::int64_t, long double> pmf;
  long double total = 0;
  for (std::int64_t y = -bound; y <= bound; ++y) {
    pmf[y] = std::exp(-static_cast<long double>(y * y) / (2 * sigma_squared));
    total += pmf[y];
  }
  for (auto& [y, p] : pmf) p /= total;
  return pmf;
}

struct Draws {
  std::map<std::int64_t, std::int64_t> counts;
  double mean = 0;
  double variance = 0;
};

// shared: every draw takes its bits from one BitReservoir (as the tree noise draws a row), the
// leftover bits of a draw serving the next; otherwise each draw reads whole words of its own.
Draws draw(const DiscreteGaussian& noise, std::uint64_t seed, std::int64_t n, bool shared = false) {
  SeededBits bits(seed);
  fedleaf::core::BitReservoir reservoir(bits);
  Draws d;
  long double sum = 0;
  long double sum_sq = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t y = shared ? noise.sample(reservoir) : noise.sample(bits);
    ++d.counts[y];
    sum += y;
    sum_sq += static_cast<long double>(y) * y;
  }
  d.mean = static_cast<double>(sum / n);
  d.variance = static_cast<double>(sum_sq / n - (sum / n) * (sum / n));
  return d;
}

// Pearson's chi-square of the draws against the pmf, over cells of expected count >= 20 (the
// tails merged into one cell each side), and its degrees of freedom.
std::pair<double, int> chi_square(const Draws& d, const std::map<std::int64_t, long double>& pmf,
                                  std::int64_t n) {
  std::vector<long double> expected;
  std::vector<long double> observed;
  long double tail_e = 0;
  long double tail_o = 0;
  for (const auto& [y, p] : pmf) {
    const auto it = d.counts.find(y);
    const long double o = it == d.counts.end() ? 0 : it->second;
    tail_e += p * n;
    tail_o += o;
    if (tail_e >= 20) {
      expected.push_back(tail_e);
      observed.push_back(tail_o);
      tail_e = tail_o = 0;
    }
  }
  expected.back() += tail_e;  // the upper tail joins the last cell
  observed.back() += tail_o;
  long double chi = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    chi += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
  }
  return {static_cast<double>(chi), static_cast<int>(expected.size()) - 1};
}

// The 0.999 quantile of chi-square with k degrees of freedom (Wilson-Hilferty).
double chi_square_999(int k) {
  const double z = 3.090;
  const double a = 2.0 / (9.0 * k);
  return k * std::pow(1 - a + z * std::sqrt(a), 3);
}

}  // namespace

TEST_CASE("discrete_gaussian_matches_the_exact_distribution_over_a_million_draws") {
  const std::int64_t n = 1'000'000;
  // The last two: draws sharing one bit reservoir (the tree noise's path), at a small scale and
  // at the grid's smallest, 4096^2 (GridGaussian).
  for (const auto& [num, den, seed, shared] :
       std::vector<std::tuple<std::uint64_t, std::uint64_t, int, bool>>{
           {9, 4, 1, false},
           {100, 1, 2, false},
           {2, 3, 3, false},
           {9, 4, 4, true},
           {4096 * 4096, 1, 5, true}}) {
    INFO("sigma^2 = " << num << "/" << den << (shared ? ", one reservoir" : ""));
    const long double sigma_squared = static_cast<long double>(num) / den;
    const auto pmf = exact_pmf(sigma_squared);
    long double variance = 0;
    for (const auto& [y, p] : pmf) variance += p * y * y;

    const Draws d = draw(DiscreteGaussian(num, den), static_cast<std::uint64_t>(seed), n, shared);

    // Mean 0 and the exact variance, within 5 standard errors.
    CHECK(std::abs(d.mean) < 5 * std::sqrt(static_cast<double>(variance) / n));
    CHECK(std::abs(d.variance - static_cast<double>(variance)) <
          5 * static_cast<double>(variance) * std::sqrt(2.0 / n));
    const auto [chi, dof] = chi_square(d, pmf, n);
    INFO("chi-square " << chi << " with " << dof << " degrees of freedom");
    CHECK(dof >= 4);
    CHECK(chi < chi_square_999(dof));
  }
}

TEST_CASE("discrete_gaussian_has_the_exact_tail") {
  // P[|Y| >= 3 sigma] for sigma = 4, against the draws, within 5 standard errors.
  const auto pmf = exact_pmf(16);
  long double tail = 0;
  for (const auto& [y, p] : pmf) tail += std::abs(y) >= 12 ? p : 0;
  const std::int64_t n = 400'000;
  const Draws d = draw(DiscreteGaussian(16, 1), 7, n);
  std::int64_t beyond = 0;
  std::int64_t largest = 0;
  for (const auto& [y, c] : d.counts) {
    if (std::abs(y) >= 12) beyond += c;
    largest = std::max<std::int64_t>(largest, std::abs(y));
  }
  const double p = static_cast<double>(tail);
  CHECK(std::abs(static_cast<double>(beyond) / n - p) < 5 * std::sqrt(p * (1 - p) / n));
  CHECK(largest < 7 * 4);   // P[|Y| >= 7 sigma] < 3e-12: none in 4e5 draws
  CHECK(largest >= 4 * 4);  // P[|Y| >= 4 sigma] ~ 7e-5: about 27 expected
}

TEST_CASE("discrete_gaussian_rejects_bad_parameters") {
  CHECK_THROWS_MATCHES(DiscreteGaussian(0, 1), fedleaf::InvalidInput,
                       MessageContains("sigma_squared: numerator and denominator must be >= 1"));
  CHECK_THROWS_MATCHES(DiscreteGaussian(1, 0), fedleaf::InvalidInput,
                       MessageContains("sigma_squared"));
  CHECK_THROWS_MATCHES(DiscreteGaussian(std::uint64_t{1} << 40, 1), fedleaf::InvalidInput,
                       MessageContains("too large for exact sampling"));
  CHECK_NOTHROW(DiscreteGaussian(std::uint64_t{8192} * 8192, 1));  // GridGaussian's largest
  const DiscreteGaussian kept(9, 4);
  CHECK(kept.sigma_squared_num() == 9);
  CHECK(kept.sigma_squared_den() == 4);
}
