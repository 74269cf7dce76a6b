#include "core/privacy/chacha20.h"

#include <algorithm>

#include "core/error.h"

namespace fedleaf::core {
namespace {

// Four ChaCha20 states side by side, one per lane: lane b is the block with counter + b. GCC and
// Clang lower these vectors to SSE2 natively and to wasm SIMD with -msimd128 (scalar code
// without it); the arithmetic is RFC 8439's either way, lane by lane.
typedef std::uint32_t Lanes __attribute__((vector_size(16)));

template <int n>
Lanes rotl(Lanes x) {
  return (x << n) | (x >> (32 - n));
}

// RFC 8439, Section 2.1.
void quarter_round(Lanes& a, Lanes& b, Lanes& c, Lanes& d) {
  a += b;
  d = rotl<16>(d ^ a);
  c += d;
  b = rotl<12>(b ^ c);
  a += b;
  d = rotl<8>(d ^ a);
  c += d;
  b = rotl<7>(b ^ c);
}

std::uint32_t load_le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

// The 16 state words of blocks counter .. counter + 3 (RFC 8439, Section 2.3: constants
// "expand 32-byte k", key, counter, nonce; 20 rounds; the initial state added back), as
// out[lane][word]. Counters wrap modulo 2^32 here; ChaCha20Bits never uses a wrapped one.
void chacha20_four_blocks(const ChaCha20Key& key, std::uint32_t counter, const ChaCha20Nonce& nonce,
                          std::uint32_t out[4][16]) {
  Lanes initial[16];
  const std::uint32_t constants[4] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
  for (int i = 0; i < 4; ++i) initial[i] = Lanes{} + constants[i];
  for (int i = 0; i < 8; ++i) initial[4 + i] = Lanes{} + load_le32(key.data() + 4 * i);
  initial[12] = Lanes{counter, counter + 1, counter + 2, counter + 3};
  for (int i = 0; i < 3; ++i) initial[13 + i] = Lanes{} + load_le32(nonce.data() + 4 * i);

  Lanes s[16];
  for (int i = 0; i < 16; ++i) s[i] = initial[i];
  for (int i = 0; i < 10; ++i) {  // 20 rounds: a column round and a diagonal round, ten times
    quarter_round(s[0], s[4], s[8], s[12]);
    quarter_round(s[1], s[5], s[9], s[13]);
    quarter_round(s[2], s[6], s[10], s[14]);
    quarter_round(s[3], s[7], s[11], s[15]);
    quarter_round(s[0], s[5], s[10], s[15]);
    quarter_round(s[1], s[6], s[11], s[12]);
    quarter_round(s[2], s[7], s[8], s[13]);
    quarter_round(s[3], s[4], s[9], s[14]);
  }
  for (int i = 0; i < 16; ++i) {
    const Lanes word = s[i] + initial[i];
    for (int lane = 0; lane < 4; ++lane) out[lane][i] = word[lane];
  }
  // The stack copies hold keystream and key material: wiped like ChaCha20Bits' own buffer.
  volatile Lanes* wipe = s;
  for (int i = 0; i < 16; ++i) wipe[i] = Lanes{};
}

}  // namespace

ChaCha20Block chacha20_block(const ChaCha20Key& key, std::uint32_t counter,
                             const ChaCha20Nonce& nonce) {
  std::uint32_t words[4][16];
  chacha20_four_blocks(key, counter, nonce, words);
  ChaCha20Block out;
  for (int i = 0; i < 16; ++i) {
    for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<std::uint8_t>(words[0][i] >> (8 * b));
  }
  volatile std::uint32_t* wipe = &words[0][0];
  for (int i = 0; i < 64; ++i) wipe[i] = 0;
  return out;
}

ChaCha20Bits::ChaCha20Bits(const ChaCha20Key& key, const ChaCha20Nonce& nonce)
    : key_(key), nonce_(nonce) {}

ChaCha20Bits::~ChaCha20Bits() {
  // volatile stores: the compiler may not drop the wipe of memory about to be freed.
  volatile std::uint8_t* key = key_.data();
  for (std::size_t i = 0; i < key_.size(); ++i) key[i] = 0;
  volatile std::uint64_t* words = words_;
  for (std::size_t i = 0; i < kBufferedWords; ++i) words[i] = 0;
}

void ChaCha20Bits::refill() {
  if (next_counter_ > UINT32_MAX) {
    throw Error("chacha20: the keystream of one nonce is exhausted (2^32 blocks)");
  }
  std::uint32_t blocks[4][16];
  chacha20_four_blocks(key_, static_cast<std::uint32_t>(next_counter_), nonce_, blocks);
  // A block's 64 bytes as little-endian 64-bit words: bytes 8j..8j+7 are state words 2j, 2j+1.
  for (int lane = 0; lane < 4; ++lane) {
    for (int j = 0; j < 8; ++j) {
      words_[8 * lane + j] =
          std::uint64_t{blocks[lane][2 * j]} | std::uint64_t{blocks[lane][2 * j + 1]} << 32;
    }
  }
  volatile std::uint32_t* wipe = &blocks[0][0];
  for (int i = 0; i < 64; ++i) wipe[i] = 0;
  // Blocks past counter 2^32 - 1 would repeat the stream from counter 0: never handed out.
  const std::uint64_t valid_blocks =
      std::min<std::uint64_t>(4, (std::uint64_t{1} << 32) - next_counter_);
  available_ = static_cast<std::size_t>(8 * valid_blocks);
  next_counter_ += valid_blocks;
  used_ = 0;
}

}  // namespace fedleaf::core
