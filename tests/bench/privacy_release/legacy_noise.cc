#include "tests/bench/privacy_release/legacy_noise.h"

#include <limits>

namespace fedleaf::bench {
namespace {

__extension__ using U128 = unsigned __int128;
using core::RandomBits;

std::uint32_t rotl(std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

void quarter_round(std::uint32_t* s, int a, int b, int c, int d) {
  s[a] += s[b];
  s[d] = rotl(s[d] ^ s[a], 16);
  s[c] += s[d];
  s[b] = rotl(s[b] ^ s[c], 12);
  s[a] += s[b];
  s[d] = rotl(s[d] ^ s[a], 8);
  s[c] += s[d];
  s[b] = rotl(s[b] ^ s[c], 7);
}

std::uint32_t load_le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

// The old chacha20_block, byte for byte.
core::ChaCha20Block legacy_block(const core::ChaCha20Key& key, std::uint32_t counter,
                                 const core::ChaCha20Nonce& nonce) {
  std::uint32_t initial[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
  for (int i = 0; i < 8; ++i) initial[4 + i] = load_le32(key.data() + 4 * i);
  initial[12] = counter;
  for (int i = 0; i < 3; ++i) initial[13 + i] = load_le32(nonce.data() + 4 * i);
  std::uint32_t s[16];
  for (int i = 0; i < 16; ++i) s[i] = initial[i];
  for (int i = 0; i < 10; ++i) {
    quarter_round(s, 0, 4, 8, 12);
    quarter_round(s, 1, 5, 9, 13);
    quarter_round(s, 2, 6, 10, 14);
    quarter_round(s, 3, 7, 11, 15);
    quarter_round(s, 0, 5, 10, 15);
    quarter_round(s, 1, 6, 11, 12);
    quarter_round(s, 2, 7, 8, 13);
    quarter_round(s, 3, 4, 9, 14);
  }
  core::ChaCha20Block out;
  for (int i = 0; i < 16; ++i) {
    const std::uint32_t word = s[i] + initial[i];
    for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<std::uint8_t>(word >> (8 * b));
  }
  return out;
}

std::uint64_t uniform_below(RandomBits& bits, std::uint64_t n) {
  const std::uint64_t rejected = (0 - n) % n;
  for (;;) {
    const std::uint64_t x = bits.next();
    if (x >= rejected) return x % n;
  }
}

bool bernoulli(RandomBits& bits, std::uint64_t num, std::uint64_t den) {
  return uniform_below(bits, den) < num;
}

bool bernoulli_exp_fraction(RandomBits& bits, std::uint64_t num, std::uint64_t den) {
  std::uint64_t k = 1;
  while (bernoulli(bits, num, den) && bernoulli(bits, 1, k)) ++k;
  return k % 2 == 1;
}

bool bernoulli_exp(RandomBits& bits, U128 whole, std::uint64_t num, std::uint64_t den) {
  for (U128 i = 0; i < whole; ++i) {
    if (!bernoulli_exp_fraction(bits, 1, 1)) return false;
  }
  return bernoulli_exp_fraction(bits, num, den);
}

std::int64_t discrete_laplace(RandomBits& bits, std::uint64_t t) {
  for (;;) {
    const std::uint64_t u = uniform_below(bits, t);
    if (!bernoulli_exp_fraction(bits, u, t)) continue;
    std::uint64_t v = 0;
    while (bernoulli_exp_fraction(bits, 1, 1)) ++v;
    const std::uint64_t magnitude = u + t * v;
    const bool negative = bernoulli(bits, 1, 2);
    if (negative && magnitude == 0) continue;
    return negative ? -static_cast<std::int64_t>(magnitude) : static_cast<std::int64_t>(magnitude);
  }
}

}  // namespace

LegacyChaCha20Bits::LegacyChaCha20Bits(const core::ChaCha20Key& key,
                                       const core::ChaCha20Nonce& nonce)
    : key_(key), nonce_(nonce) {}

std::uint64_t LegacyChaCha20Bits::next() {
  if (used_ == block_.size()) {
    block_ = legacy_block(key_, next_counter_++, nonce_);
    used_ = 0;
  }
  std::uint64_t word = 0;
  for (int b = 7; b >= 0; --b) word = word << 8 | block_[used_ + static_cast<std::size_t>(b)];
  used_ += 8;
  return word;
}

std::int64_t legacy_sample(RandomBits& bits, std::uint64_t scale) {
  const std::uint64_t num = scale * scale;
  const std::uint64_t den = 1;
  const std::uint64_t t = scale + 1;
  const std::uint64_t accept_den = 2 * num * den * t * t;
  for (;;) {
    const std::int64_t y = discrete_laplace(bits, t);
    const U128 magnitude = y < 0 ? U128(-(y + 1)) + 1 : U128(y);
    const U128 scaled = magnitude * den * t;
    const U128 diff = scaled >= num ? scaled - num : num - scaled;
    const U128 rest = diff % accept_den;
    const U128 whole =
        diff >> 64 != 0 ? std::numeric_limits<U128>::max() : diff * diff / accept_den;
    const auto frac = static_cast<std::uint64_t>(rest * rest % accept_den);
    if (bernoulli_exp(bits, whole, frac, accept_den)) return y;
  }
}

void legacy_add_to_row(const std::vector<LegacyNodeKey>& keys, std::uint64_t scale,
                       std::uint32_t tensor, std::uint64_t row, std::int64_t* units,
                       std::size_t n) {
  core::ChaCha20Nonce nonce{};
  for (int b = 0; b < 4; ++b) nonce[b] = static_cast<std::uint8_t>(tensor >> (8 * b));
  for (int b = 0; b < 8; ++b) nonce[4 + b] = static_cast<std::uint8_t>(row >> (8 * b));
  for (const LegacyNodeKey& key : keys) {
    LegacyChaCha20Bits bits(key.key, nonce);
    for (std::size_t i = 0; i < n; ++i) units[i] += key.sign * legacy_sample(bits, scale);
  }
}

}  // namespace fedleaf::bench
