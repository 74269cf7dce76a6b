// Exact coins and uniform integers from random bits: the primitives the discrete Gaussian
// (discrete_gaussian.h) is built from. Each has exactly the distribution it names — decisions
// are comparisons of uniform bits with exact integers, no floating point — and spends few bits.
//
//   BitReservoir bits(source);
//   bool heads = bernoulli_fraction(bits, 3, 7);        // P = 3/7
//   std::uint64_t u = uniform_below(bits, 6000);        // uniform in [0, 6000)
//   bool e = bernoulli_exp_minus_one(bits);             // P = exp(-1)
//   bool f = bernoulli_exp_fraction(bits, 2, 5);        // P = exp(-2/5)
//
// Why: the tree noise draws a discrete Gaussian for every coordinate of every row (issue 39), and
// the sampler's cost is these primitives' cost: the bits they read (ChaCha20 keystream) and the
// unpredictable branches they take. The exactness argument of each is next to its code
// (exact_bernoulli.cc).
#pragma once

#include <cstdint>

#include "core/privacy/bit_reservoir.h"

namespace fedleaf::core {

// Bernoulli(num / den) for 0 <= num <= den, 1 <= den < 2^63. Reads 2 bits on average.
bool bernoulli_fraction(BitReservoir& bits, std::uint64_t num, std::uint64_t den);

// Bernoulli(1 / k) for k >= 1.
bool bernoulli_one_over(BitReservoir& bits, std::uint64_t k);

// Uniform in [0, n) for n >= 1.
std::uint64_t uniform_below(BitReservoir& bits, std::uint64_t n);

// Bernoulli(exp(-1)), from 32 bits in all but a 2^-28 fraction of calls.
bool bernoulli_exp_minus_one(BitReservoir& bits);

// Bernoulli(exp(-num / den)) for 0 <= num <= den, 1 <= den < 2^63 (Canonne, Kamath, Steinke
// 2020, Algorithm 1 for gamma in [0, 1]; by inversion from one uniform when den < 2^20).
bool bernoulli_exp_fraction(BitReservoir& bits, std::uint64_t num, std::uint64_t den);

}  // namespace fedleaf::core
