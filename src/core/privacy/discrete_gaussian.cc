#include "core/privacy/discrete_gaussian.h"

#include <limits>
#include <string>

#include "core/error.h"
#include "core/privacy/exact_bernoulli.h"

namespace fedleaf::core {
namespace {

__extension__ using U128 = unsigned __int128;

// Every coin and uniform integer below is exact (exact_bernoulli.h), so Algorithms 1-3 keep
// their exact output distribution however few bits the primitives read.

// Bernoulli(exp(-gamma)) for gamma = whole + num / den (CKS Algorithm 1, gamma > 1): whole
// independent Bernoulli(exp(-1)), then the fraction. `whole` may be astronomically large; the
// loop then ends at its first failure, after 1.6 draws on average.
bool bernoulli_exp(BitReservoir& bits, U128 whole, std::uint64_t num, std::uint64_t den) {
  for (U128 i = 0; i < whole; ++i) {
    if (!bernoulli_exp_minus_one(bits)) return false;
  }
  return bernoulli_exp_fraction(bits, num, den);
}

// Discrete Laplace with integer scale t >= 1: P[Y = y] proportional to exp(-|y| / t)
// (CKS Algorithm 2 with s = 1).
std::int64_t discrete_laplace(BitReservoir& bits, std::uint64_t t) {
  for (;;) {
    const std::uint64_t u = uniform_below(bits, t);
    if (!bernoulli_exp_fraction(bits, u, t)) continue;
    std::uint64_t v = 0;
    while (bernoulli_exp_minus_one(bits)) ++v;
    const std::uint64_t magnitude = u + t * v;
    const bool negative = bits.take_bit();  // Bernoulli(1/2)
    if (negative && magnitude == 0) continue;
    return negative ? -static_cast<std::int64_t>(magnitude) : static_cast<std::int64_t>(magnitude);
  }
}

std::uint64_t isqrt(std::uint64_t n) {
  std::uint64_t low = 0;
  std::uint64_t high = std::uint64_t{1} << 32;  // sqrt(2^64)
  while (high - low > 1) {                      // invariant: low^2 <= n < high^2
    const std::uint64_t mid = low + (high - low) / 2;
    (U128{mid} * mid <= n ? low : high) = mid;
  }
  return low;
}

}  // namespace

DiscreteGaussian::DiscreteGaussian(std::uint64_t sigma_squared_num, std::uint64_t sigma_squared_den)
    : num_(sigma_squared_num), den_(sigma_squared_den) {
  if (num_ < 1 || den_ < 1) {
    throw InvalidInput("sigma_squared: numerator and denominator must be >= 1, got " +
                       std::to_string(num_) + "/" + std::to_string(den_));
  }
  t_ = isqrt(num_ / den_) + 1;  // floor(sqrt(p/q)) = floor(sqrt(floor(p/q)))
  const U128 accept_den = U128{2} * num_ * den_ * t_ * t_;
  diff_mul_ = den_ * t_;
  diff_sub_ = num_;
  if (U128{num_} * den_ >= (U128{1} << 62) || accept_den >= (U128{1} << 63)) {
    throw InvalidInput("sigma_squared: " + std::to_string(num_) + "/" + std::to_string(den_) +
                       " is too large for exact sampling (2 num den (floor(sigma)+1)^2 must be "
                       "below 2^63)");
  }
  accept_den_ = static_cast<std::uint64_t>(accept_den);
  // An integer sigma = s (every GridGaussian's): t = s instead of s + 1. Algorithm 3's output law
  // holds for any Laplace scale t > 0 — P[return y] is proportional to exp(-|y|/t) exp(-(|y| -
  // sigma^2/t)^2 / (2 sigma^2)) = exp(-y^2 / (2 sigma^2)) exp(-sigma^2 / (2 t^2)) — and t only
  // sets the cost, about the same here. With t = s the test's gamma reduces to (|y| - s)^2 /
  // (2 s^2): a denominator below 2^31, which bernoulli_exp_fraction decides by inversion.
  const std::uint64_t s = t_ - 1;
  if (den_ == 1 && s >= 1 && s * s == num_) {
    t_ = s;
    diff_mul_ = 1;
    diff_sub_ = s;
    accept_den_ = 2 * s * s;
  }
}

std::int64_t DiscreteGaussian::sample(RandomBits& bits) const {
  BitReservoir reservoir(bits);
  return sample(reservoir);
}

std::int64_t DiscreteGaussian::sample(BitReservoir& bits) const {
  for (;;) {
    const std::int64_t y = discrete_laplace(bits, t_);
    // Accept with probability exp(-(|y| - sigma^2/t)^2 / (2 sigma^2))
    //   = exp(-(|y| q t - p)^2 / (2 p q t^2)), or for an integer sigma = s = t,
    //   = exp(-(|y| - s)^2 / (2 s^2)): diff = |y| diff_mul_ - diff_sub_, over accept_den_.
    const U128 magnitude = y < 0 ? U128(-(y + 1)) + 1 : U128(y);
    const U128 scaled = magnitude * diff_mul_;
    const U128 diff = scaled >= diff_sub_ ? scaled - diff_sub_ : diff_sub_ - scaled;
    // gamma = diff^2 / accept_den_. In 64 bits when diff^2 fits (every draw within about
    // 2^32 / t of sigma^2 / t, all but a vanishing tail at the grid's scales): the same whole
    // part and remainder as the 128-bit path, without its library division.
    if (diff >> 32 == 0) {
      const auto d = static_cast<std::uint64_t>(diff);
      if (bernoulli_exp(bits, d * d / accept_den_, d * d % accept_den_, accept_den_)) return y;
      continue;
    }
    // Its whole part saturates where diff^2 would not fit (the acceptance probability there is
    // below exp(-2^64)).
    const U128 rest = diff % accept_den_;
    const U128 whole =
        diff >> 64 != 0 ? std::numeric_limits<U128>::max() : diff * diff / accept_den_;
    const auto frac = static_cast<std::uint64_t>(rest * rest % accept_den_);
    if (bernoulli_exp(bits, whole, frac, accept_den_)) return y;
  }
}

}  // namespace fedleaf::core
