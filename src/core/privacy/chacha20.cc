#include "core/privacy/chacha20.h"

#include <algorithm>

#include "core/error.h"

namespace fedleaf::core {
namespace {

std::uint32_t rotl(std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

// RFC 8439, Section 2.1.
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

}  // namespace

ChaCha20Block chacha20_block(const ChaCha20Key& key, std::uint32_t counter,
                             const ChaCha20Nonce& nonce) {
  // RFC 8439, Section 2.3: constants "expand 32-byte k", key, counter, nonce.
  std::uint32_t initial[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
  for (int i = 0; i < 8; ++i) initial[4 + i] = load_le32(key.data() + 4 * i);
  initial[12] = counter;
  for (int i = 0; i < 3; ++i) initial[13 + i] = load_le32(nonce.data() + 4 * i);

  std::uint32_t s[16];
  std::copy(initial, initial + 16, s);
  for (int i = 0; i < 10; ++i) {  // 20 rounds: a column round and a diagonal round, ten times
    quarter_round(s, 0, 4, 8, 12);
    quarter_round(s, 1, 5, 9, 13);
    quarter_round(s, 2, 6, 10, 14);
    quarter_round(s, 3, 7, 11, 15);
    quarter_round(s, 0, 5, 10, 15);
    quarter_round(s, 1, 6, 11, 12);
    quarter_round(s, 2, 7, 8, 13);
    quarter_round(s, 3, 4, 9, 14);
  }
  ChaCha20Block out;
  for (int i = 0; i < 16; ++i) {
    const std::uint32_t word = s[i] + initial[i];
    for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<std::uint8_t>(word >> (8 * b));
  }
  return out;
}

ChaCha20Bits::ChaCha20Bits(const ChaCha20Key& key, const ChaCha20Nonce& nonce)
    : key_(key), nonce_(nonce) {}

ChaCha20Bits::~ChaCha20Bits() {
  // volatile stores: the compiler may not drop the wipe of memory about to be freed.
  volatile std::uint8_t* key = key_.data();
  for (std::size_t i = 0; i < key_.size(); ++i) key[i] = 0;
  volatile std::uint8_t* block = block_.data();
  for (std::size_t i = 0; i < block_.size(); ++i) block[i] = 0;
}

std::uint64_t ChaCha20Bits::next() {
  if (used_ == block_.size()) {
    if (next_counter_ > UINT32_MAX) {
      throw Error("chacha20: the keystream of one nonce is exhausted (2^32 blocks)");
    }
    block_ = chacha20_block(key_, static_cast<std::uint32_t>(next_counter_), nonce_);
    ++next_counter_;
    used_ = 0;
  }
  std::uint64_t word = 0;
  for (int b = 7; b >= 0; --b) word = word << 8 | block_[used_ + static_cast<std::size_t>(b)];
  used_ += 8;
  return word;
}

}  // namespace fedleaf::core
