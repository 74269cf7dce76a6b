// Exact sampling of the discrete Gaussian N_Z(0, sigma^2): P[Y = y] proportional to
// exp(-y^2 / (2 sigma^2)) over the integers, for a rational sigma^2.
//
//   DiscreteGaussian noise(/*sigma_squared_num=*/9, /*sigma_squared_den=*/4);   // sigma 1.5
//   std::int64_t y = noise.sample(bits);    // bits: a RandomBits (random_bits.h)
//
// Canonne, Kamath, Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020
// (arXiv:2004.00010), Section 5: Algorithm 1 (Bernoulli(exp(-gamma)) for rational gamma),
// Algorithm 2 (discrete Laplace, here with integer scale t) and Algorithm 3 (the discrete
// Gaussian by rejection from the discrete Laplace with t = floor(sigma) + 1). Every decision is
// a comparison of integers drawn uniformly from the source with exact integers: no floating point
// anywhere, so no rounding can bias the distribution or leak the value it was added to (Mironov,
// "On Significance of the Least Significant Bits for Differential Privacy", CCS 2012).
//
// Integer bounds: the acceptance test of Algorithm 3 is Bernoulli(exp(-(|Y| q t - p)^2 /
// (2 p q t^2))) for sigma^2 = p / q; 2 p q t^2 must stay below 2^63 (sigma up to about 46,000
// when q = 1). The sampler's running time is random (a few draws on average) and depends on
// nothing but the source's bits.
//
// The coins and uniform integers of Algorithms 1-3 come from exact_bernoulli.h (issue 39: a draw
// per coordinate of every row must be cheap): each has exactly its distribution while reading
// few bits — lazy comparisons of uniform bits with rational thresholds, Lemire's uniform integers,
// Algorithm 1 by inversion against gamma^k / k! — so the output is N_Z(0, sigma^2) exactly, from
// about 4 random 64-bit words per draw at the grid's scales where the first version took 23.
#pragma once

#include <cstdint>

#include "core/privacy/bit_reservoir.h"
#include "core/privacy/random_bits.h"

namespace fedleaf::core {

class DiscreteGaussian {
 public:
  // InvalidInput ("sigma_squared: ...") unless num, den >= 1 and 2 num den t^2 < 2^63.
  DiscreteGaussian(std::uint64_t sigma_squared_num, std::uint64_t sigma_squared_den);

  // One draw. The first form reads whole words from `bits` for this draw alone; the second
  // takes bits from a reservoir kept across draws, so leftover bits serve the next draw (what
  // a run of draws should use; the tree noise does).
  std::int64_t sample(RandomBits& bits) const;
  std::int64_t sample(BitReservoir& bits) const;

  std::uint64_t sigma_squared_num() const { return num_; }
  std::uint64_t sigma_squared_den() const { return den_; }

 private:
  std::uint64_t num_;
  std::uint64_t den_;
  std::uint64_t t_;           // the discrete Laplace scale: floor(sigma) + 1, or sigma if whole
  std::uint64_t diff_mul_;    // Algorithm 3's test: gamma = (|y| diff_mul_ - diff_sub_)^2 /
  std::uint64_t diff_sub_;    //   accept_den_; (den t, num, 2 num den t^2) in general,
  std::uint64_t accept_den_;  //   (1, sigma, 2 sigma^2) for a whole sigma
};

}  // namespace fedleaf::core
