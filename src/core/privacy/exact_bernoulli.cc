#include "core/privacy/exact_bernoulli.h"

#include <vector>

namespace fedleaf::core {
namespace {

constexpr std::uint64_t kTwo32 = std::uint64_t{1} << 32;

// U, a uniform real in [0, 1), is read lazily: its first 32 bits W (one take), then more bits
// only if needed. Against a rational threshold num/den: with T = floor(2^32 num/den) and
// R = 2^32 num mod den, U = (W + U') / 2^32 and num/den = (T + R/den) / 2^32, so
//   U < num/den  <=>  W < T, or W == T and U' < R/den,
// the last a Bernoulli(R/den) of the bits after W: exact, and needed with probability 2^-32.
bool below_after_chunk(BitReservoir& bits, std::uint64_t w, std::uint64_t t, std::uint64_t r,
                       std::uint64_t den) {
  if (w != t) return w < t;
  return bernoulli_fraction(bits, r, den);
}

// U < num/den for 0 <= num < den < 2^63 from U's first 32 bits W without a division: W / 2^32
// against num/den is W den against num 2^32 (products below 2^95). Certain when (W + 1) den <=
// num 2^32 (U < W/2^32 + 2^-32 <= p) or W den >= num 2^32 (U >= W/2^32 >= p); otherwise W is
// floor(2^32 p) and the rest of U decides against the remainder, as in below_after_chunk.
bool below_fraction(BitReservoir& bits, std::uint64_t num, std::uint64_t den) {
  __extension__ using U128 = unsigned __int128;
  const U128 w_den = static_cast<U128>(bits.take(32)) * den;
  const U128 target = static_cast<U128>(num) << 32;
  if (w_den + den <= target) return true;
  if (w_den >= target) return false;
  return bernoulli_fraction(bits, static_cast<std::uint64_t>(target - w_den), den);
}

// A uniform U in [0, 1) compared with several thresholds: its first 32 bits read at once, later
// bits one at a time and kept, so every comparison sees the same U. Each comparison is exact
// (below_fraction's argument, then the kept and new bits against the remainder's expansion).
class LazyUniform {
 public:
  explicit LazyUniform(BitReservoir& bits) : bits_(bits), head_(bits.take(32)) {}

  // U < num/den for 0 <= num <= den < 2^63.
  bool below(std::uint64_t num, std::uint64_t den) {
    __extension__ using U128 = unsigned __int128;
    const U128 head_den = static_cast<U128>(head_) * den;
    const U128 target = static_cast<U128>(num) << 32;
    if (head_den + den <= target) return true;
    if (head_den >= target) return false;
    std::uint64_t rest = static_cast<std::uint64_t>(target - head_den);  // 0 < rest < den
    for (std::size_t i = 0; rest != 0; ++i) {
      rest <<= 1;
      const bool digit = rest >= den;
      if (digit) rest -= den;
      if (i == tail_.size()) tail_.push_back(bits_.take_bit());
      if (tail_[i] != digit) return digit;
    }
    return false;  // the threshold's expansion ended: U >= it
  }

 private:
  BitReservoir& bits_;
  std::uint64_t head_;
  std::vector<bool> tail_;  // U's bits after the first 32, as far as read
};

struct Chunk {
  std::uint64_t t;  // floor(2^32 / den)
  std::uint64_t r;  // 2^32 mod den
  std::uint64_t den;
};

constexpr Chunk chunk_of(std::uint64_t den) { return {kTwo32 / den, kTwo32 % den, den}; }

// 1/k for k = 0..16 (entries 0 and 1 unused).
constexpr Chunk kOneOver[17] = {
    {0, 0, 1},    {0, 0, 1},    chunk_of(2),  chunk_of(3),  chunk_of(4),  chunk_of(5),
    chunk_of(6),  chunk_of(7),  chunk_of(8),  chunk_of(9),  chunk_of(10), chunk_of(11),
    chunk_of(12), chunk_of(13), chunk_of(14), chunk_of(15), chunk_of(16)};

constexpr std::uint64_t factorial(int k) { return k <= 1 ? 1 : k * factorial(k - 1); }

// 1/k! for k = 2..12 (12! < 2^32 < 13!), at index k - 2.
constexpr int kLastFactorial = 12;
constexpr Chunk kOneOverFactorial[kLastFactorial - 1] = {
    chunk_of(factorial(2)),  chunk_of(factorial(3)), chunk_of(factorial(4)),
    chunk_of(factorial(5)),  chunk_of(factorial(6)), chunk_of(factorial(7)),
    chunk_of(factorial(8)),  chunk_of(factorial(9)), chunk_of(factorial(10)),
    chunk_of(factorial(11)), chunk_of(factorial(12))};

}  // namespace

// U drawn one bit at a time against num/den's binary expansion, computed exactly by doubling the
// remainder: U < num/den is decided at the first bit where they differ, after 2 bits on
// average. P[U < p] = p (U = p has probability 0).
bool bernoulli_fraction(BitReservoir& bits, std::uint64_t num, std::uint64_t den) {
  if (num == den) return true;
  // Invariant: U's bits so far equal p's digits so far, and num/den is the rest of p, scaled.
  while (num != 0) {
    num <<= 1;  // num < den < 2^63: no overflow
    const bool digit = num >= den;
    if (digit) num -= den;
    const bool bit = bits.take_bit();
    if (bit != digit) return digit;  // U's 0 under p's 1: U < p; the other way, U > p
  }
  return false;  // p's expansion ended: U >= p
}

bool bernoulli_one_over(BitReservoir& bits, std::uint64_t k) {
  if (k <= 1) return true;
  if (k == 2) return !bits.take_bit();
  if (k <= 16) {
    const Chunk& c = kOneOver[k];
    return below_after_chunk(bits, bits.take(32), c.t, c.r, c.den);
  }
  if (k < kTwo32) return below_after_chunk(bits, bits.take(32), kTwo32 / k, kTwo32 % k, k);
  return bernoulli_fraction(bits, 1, k);
}

// Lemire's method ("Fast random integer generation in an interval", ACM TOMACS 2019): for a
// uniform 32-bit x, x n / 2^32 is uniform in [0, n) once the 2^32 mod n values of x's low
// product part that would over-represent some results are rejected; the rejection test needs
// the division only when the low part is below n (probability n / 2^32). Exact for n <= 2^32.
// Larger n: the fewest bits that can hold n - 1, retried while >= n.
std::uint64_t uniform_below(BitReservoir& bits, std::uint64_t n) {
  if (n <= 1) return 0;
  if (n <= kTwo32) {
    std::uint64_t m = bits.take(32) * n;
    if ((m & (kTwo32 - 1)) < n) {
      const std::uint64_t rejected = (kTwo32 - n) % n;  // 2^32 mod n
      while ((m & (kTwo32 - 1)) < rejected) m = bits.take(32) * n;
    }
    return m >> 32;
  }
  const int width = 64 - __builtin_clzll(n - 1);  // 2^width >= n
  for (;;) {
    const std::uint64_t x = bits.take(width);
    if (x < n) return x;
  }
}

// CKS Algorithm 1 with gamma = 1 returns whether K is odd, K the first k >= 1 with
// Bernoulli(1/k) = 0; P[K > k] = 1/k!. Here K is drawn by inversion from one uniform U:
// K = 1 + #{k >= 1 : U < 1/k!} has the same law (P[K > k] = P[U < 1/k!] = 1/k!), and U < 1 always.
// The 11 thresholds 1/2!..1/12! are compared with U's first 32 bits at once, exactly
// (below_after_chunk: a tie reads more bits). They decrease, so W at or above one is above all
// later ones. When U < 1/12! (all 11 hold: probability 1/12!), K > 12 and, given that event, K's
// law is that of the sequential algorithm continued from k = 13 on fresh bits.
bool bernoulli_exp_minus_one(BitReservoir& bits) {
  const std::uint64_t w = bits.take(32);
  int below = 0;  // #{k in 2..12 : U < 1/k!}
  bool tie = false;
  for (const Chunk& c : kOneOverFactorial) {
    below += w < c.t ? 1 : 0;
    tie |= w == c.t;
  }
  if (tie) {
    // W equals the threshold of k = below + 2; thresholds above it hold, later ones fail.
    const Chunk& c = kOneOverFactorial[below];
    if (bernoulli_fraction(bits, c.r, c.den)) ++below;
  }
  std::uint64_t k = 1 + 1 + static_cast<std::uint64_t>(below);  // K when below < 11
  if (below == kLastFactorial - 1) {
    k = kLastFactorial + 1;
    while (bernoulli_one_over(bits, k)) ++k;
  }
  return k % 2 == 1;
}

// CKS Algorithm 1: the parity of the first k with Bernoulli(gamma / k) = 0, odd with probability
// exp(-gamma); Bernoulli(gamma / k) is drawn as Bernoulli(gamma) and Bernoulli(1 / k),
// independent.
// Here K is drawn by inversion, as in bernoulli_exp_minus_one: K = 1 + #{k >= 1 : U < gamma^k/k!}
// has P[K > k] = gamma^k / k!, the law of Algorithm 1's K. One U is compared with gamma,
// gamma^2/2!, ... as exact fractions num^k / (den^k k!) while den^k k! < 2^63 (three thresholds
// for den < 2^20, two below 2^31, one above; K = 1, the likeliest, after one comparison). Once U
// is below the last of them — exactly the event K > k — the rest of K follows the sequential
// algorithm (Bernoulli(gamma) and Bernoulli(1/k) for k = k + 1, ...) on fresh bits.
bool bernoulli_exp_fraction(BitReservoir& bits, std::uint64_t num, std::uint64_t den) {
  if (num == den) return bernoulli_exp_minus_one(bits);
  if (num == 0) return true;
  __extension__ using U128 = unsigned __int128;
  LazyUniform u(bits);
  std::uint64_t k = 1;
  std::uint64_t power = num;      // num^k
  std::uint64_t factorial = den;  // den^k k!
  for (;;) {
    if (!u.below(power, factorial)) return k % 2 == 1;  // U < gamma^(k-1)/(k-1)! only: K = k
    const U128 next_factorial = static_cast<U128>(factorial) * den * (k + 1);
    if (next_factorial >= (U128{1} << 63)) break;
    power *= num;  // num^(k+1) < den^(k+1) <= next_factorial < 2^63
    factorial = static_cast<std::uint64_t>(next_factorial);
    ++k;
  }
  ++k;  // U < gamma^(k-1)/(k-1)!: K >= k
  while (below_fraction(bits, num, den) && bernoulli_one_over(bits, k)) ++k;
  return k % 2 == 1;
}

}  // namespace fedleaf::core
