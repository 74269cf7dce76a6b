#include "core/privacy/exact_bernoulli.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "tests/core/privacy/scripted_bits.h"
#include "tests/core/privacy/seeded_bits.h"

using fedleaf::core::bernoulli_exp_fraction;
using fedleaf::core::bernoulli_exp_minus_one;
using fedleaf::core::bernoulli_fraction;
using fedleaf::core::bernoulli_one_over;
using fedleaf::core::BitReservoir;
using fedleaf::core::uniform_below;
using fedleaf::test::ScriptedBits;
using fedleaf::test::SeededBits;

namespace {

// The share of true over n calls is p within 5 standard errors.
void check_frequency(std::uint64_t seed, double p, const std::function<bool(BitReservoir&)>& coin) {
  SeededBits source(seed);
  BitReservoir bits(source);
  const int n = 1'000'000;
  int heads = 0;
  for (int i = 0; i < n; ++i) heads += coin(bits) ? 1 : 0;
  INFO("p " << p << ", observed " << static_cast<double>(heads) / n);
  CHECK(std::abs(static_cast<double>(heads) / n - p) < 5 * std::sqrt(p * (1 - p) / n) + 1e-12);
}

}  // namespace

TEST_CASE("exact_bernoulli_coins_have_their_probabilities_over_a_million_calls") {
  check_frequency(1, 3.0 / 7, [](BitReservoir& b) { return bernoulli_fraction(b, 3, 7); });
  check_frequency(2, 1.0 / 3, [](BitReservoir& b) { return bernoulli_one_over(b, 3); });
  check_frequency(3, 1.0 / 2, [](BitReservoir& b) { return bernoulli_one_over(b, 2); });
  check_frequency(4, 1.0 / 21, [](BitReservoir& b) { return bernoulli_one_over(b, 21); });
  check_frequency(5, std::exp(-1.0), [](BitReservoir& b) { return bernoulli_exp_minus_one(b); });
  check_frequency(6, std::exp(-0.4),
                  [](BitReservoir& b) { return bernoulli_exp_fraction(b, 2, 5); });
  check_frequency(7, std::exp(-4095.0 / 4097),
                  [](BitReservoir& b) { return bernoulli_exp_fraction(b, 4095, 4097); });
  SeededBits source(8);
  BitReservoir bits(source);
  CHECK(bernoulli_fraction(bits, 0, 5) == false);
  CHECK(bernoulli_fraction(bits, 5, 5) == true);
  CHECK(bernoulli_one_over(bits, 1) == true);
  CHECK(bernoulli_exp_fraction(bits, 0, 9) == true);
}

TEST_CASE("uniform_below_is_uniform_and_in_range") {
  for (const std::uint64_t n : {std::uint64_t{6000}, std::uint64_t{8193}, std::uint64_t{1} << 32,
                                (std::uint64_t{1} << 40) + 3}) {
    INFO("n " << n);
    SeededBits source(n);
    BitReservoir bits(source);
    const int draws = 400'000;
    const int cells = 8;
    std::vector<int> counts(cells, 0);
    for (int i = 0; i < draws; ++i) {
      const std::uint64_t u = uniform_below(bits, n);
      REQUIRE(u < n);
      ++counts[static_cast<std::size_t>(static_cast<double>(u) / static_cast<double>(n) * cells)];
    }
    // Pearson's chi-square over 8 equal cells (widths differ by at most one value), 7 degrees of
    // freedom: below 24.3 with probability 0.999.
    double chi = 0;
    const double expected = static_cast<double>(draws) / cells;
    for (int c : counts) chi += (c - expected) * (c - expected) / expected;
    CHECK(chi < 24.3);
  }
  SeededBits source(9);
  BitReservoir bits(source);
  CHECK(uniform_below(bits, 1) == 0);
}

TEST_CASE("bernoulli_exp_minus_one_resolves_a_tie_with_a_threshold_from_the_next_bits") {
  // U's first 32 bits equal floor(2^32 / 3!) = 715827882; 2^32 mod 6 = 4, so U < 1/3! iff the
  // bits after them are below 4/6 = 0.1010...b. U < 1/2! holds, U < 1/4! does not.
  const std::uint64_t w = 715827882;
  {  // next bit 0: U < 1/3!, so K = 4 (even): false
    ScriptedBits source({w});
    BitReservoir bits(source);
    CHECK(bernoulli_exp_minus_one(bits) == false);
  }
  {  // next bits 1, 1: U > 1/3!, so K = 3 (odd): true
    ScriptedBits source({w | std::uint64_t{0b11} << 32});
    BitReservoir bits(source);
    CHECK(bernoulli_exp_minus_one(bits) == true);
  }
}

TEST_CASE("bernoulli_exp_minus_one_continues_past_the_table_when_u_is_below_1_over_12_factorial") {
  // W = 0: U < 1/12!, K > 12; then Bernoulli(1/13) from the next 32 bits decides K.
  {  // Bernoulli(1/13) = 0: K = 13, odd: true
    ScriptedBits source({std::uint64_t{0xffffffff} << 32});
    BitReservoir bits(source);
    CHECK(bernoulli_exp_minus_one(bits) == true);
  }
  {  // Bernoulli(1/13) = 1, Bernoulli(1/14) = 0: K = 14, even: false
    ScriptedBits source({0, 0xffffffff});
    BitReservoir bits(source);
    CHECK(bernoulli_exp_minus_one(bits) == false);
  }
}

TEST_CASE("bernoulli_one_over_resolves_a_tie_with_its_threshold_from_the_next_bits") {
  // floor(2^32 / 3) = 1431655765, 2^32 mod 3 = 1: U < 1/3 iff the next bits are below 1/3.
  {
    ScriptedBits source({1431655765});  // next bits 0, 0: below 1/3 = 0.0101...b
    BitReservoir bits(source);
    CHECK(bernoulli_one_over(bits, 3) == true);
  }
  {
    ScriptedBits source({1431655765 | std::uint64_t{1} << 32});  // next bit 1: above
    BitReservoir bits(source);
    CHECK(bernoulli_one_over(bits, 3) == false);
  }
}

TEST_CASE("bernoulli_exp_fraction_by_inversion_resolves_a_tie_from_the_next_bits") {
  // gamma = 1/3 (den below 2^20: inversion). U's first 32 bits floor(2^32 / 3) = 1431655765,
  // 2^32 mod 3 = 1: U < 1/3 iff the next bits are below 1/3 = 0.0101...b.
  {  // next bits 0, 0: U < 1/3 but not < 1/18: K = 2, even: false
    ScriptedBits source({1431655765});
    BitReservoir bits(source);
    CHECK(bernoulli_exp_fraction(bits, 1, 3) == false);
  }
  {  // next bit 1: U > 1/3: K = 1: true
    ScriptedBits source({1431655765 | std::uint64_t{1} << 32});
    BitReservoir bits(source);
    CHECK(bernoulli_exp_fraction(bits, 1, 3) == true);
  }
}

TEST_CASE("bernoulli_exp_fraction_by_inversion_compares_every_threshold_with_the_same_u") {
  // gamma = 2^-19: thresholds 2^-19, 2^-39, 2^-57/6. U = 2^-40 + ...: its first 32 bits are 0 and
  // the next 8 are 0000000 1, read once for the second threshold (U < 2^-39) and reused for the
  // third (U > 2^-57/6): K = 3, odd: true. Fresh bits for the third would read zeros, then the
  // sequential tail would read the all-ones second word and answer false.
  ScriptedBits source({std::uint64_t{1} << (32 + 7), ~std::uint64_t{0}});
  BitReservoir bits(source);
  CHECK(bernoulli_exp_fraction(bits, 1, std::uint64_t{1} << 19) == true);
}

TEST_CASE("bernoulli_exp_fraction_with_a_large_denominator_has_its_probability") {
  // den >= 2^20: the sequential algorithm (Algorithm 3's acceptance test takes this path).
  const std::uint64_t den = std::uint64_t{1} << 42;
  check_frequency(10, std::exp(-0.75),
                  [den](BitReservoir& b) { return bernoulli_exp_fraction(b, 3 * (den / 4), den); });
  const std::uint64_t just_above = (std::uint64_t{1} << 20) + 1;  // the first sequential den
  check_frequency(11, std::exp(-static_cast<double>(just_above - 1) / just_above),
                  [just_above](BitReservoir& b) {
                    return bernoulli_exp_fraction(b, just_above - 1, just_above);
                  });
}
