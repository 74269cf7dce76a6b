#include "core/privacy/chacha20.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace fedleaf::core {
namespace {

// Eight ChaCha20 states side by side, one per lane: lane b is the block with counter + b. GCC and
// Clang lower these vectors to whatever the target has (two SSE2 registers per vector on plain
// x86-64, one AVX2 register in the clone below, wasm SIMD with -msimd128, scalar code without);
// the arithmetic is RFC 8439's either way, lane by lane.
typedef std::uint32_t Lanes __attribute__((vector_size(4 * ChaCha20Bits::kLanes)));

// RFC 8439, Section 2.1; `x = (x ^ y) <<< n` on every lane. By reference and always inlined:
// a vector passed by value to a function of its own would depend on the clone's ABI.
#define FEDLEAF_XOR_ROTL(x, y, n)             \
  do {                                        \
    (x) ^= (y);                               \
    (x) = ((x) << (n)) | ((x) >> (32 - (n))); \
  } while (0)

template <class Word>
__attribute__((always_inline)) inline void quarter_round(Word& a, Word& b, Word& c, Word& d) {
  a += b;
  FEDLEAF_XOR_ROTL(d, a, 16);
  c += d;
  FEDLEAF_XOR_ROTL(b, c, 12);
  a += b;
  FEDLEAF_XOR_ROTL(d, a, 8);
  c += d;
  FEDLEAF_XOR_ROTL(b, c, 7);
}

std::uint32_t load_le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

// An AVX2 clone where the CPU has it (GCC's function multi-versioning, chosen once at load
// time); the same results either way.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define FEDLEAF_CHACHA_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FEDLEAF_CHACHA_CLONES
#endif

// The 16 state words of kLanes blocks, lane b under counters[b] and the nonce words
// nonces[0..2][b] (RFC 8439, Section 2.3: constants "expand 32-byte k", key, counter, nonce; 20
// rounds; the initial state added back), as out[word][lane].
FEDLEAF_CHACHA_CLONES
void chacha20_lanes(const ChaCha20Key& key, const Lanes& counters, const Lanes (&nonces)[3],
                    ChaCha20Lanes& out) {
  Lanes initial[16];
  const std::uint32_t constants[4] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
  for (int i = 0; i < 4; ++i) initial[i] = Lanes{} + constants[i];
  for (int i = 0; i < 8; ++i) initial[4 + i] = Lanes{} + load_le32(key.data() + 4 * i);
  initial[12] = counters;
  for (int i = 0; i < 3; ++i) initial[13 + i] = nonces[i];

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
    std::memcpy(out[i], &word, sizeof(word));
  }
  // The stack copies hold keystream and key material: wiped like ChaCha20Bits' own buffer.
  volatile Lanes* wipe = s;
  for (int i = 0; i < 16; ++i) wipe[i] = Lanes{};
}

// Blocks counter .. counter + kLanes - 1 of one stream. Counters wrap modulo 2^32 here;
// ChaCha20Bits never hands out a wrapped one.
void chacha20_blocks(const ChaCha20Key& key, std::uint32_t counter, const ChaCha20Nonce& nonce,
                     ChaCha20Lanes& out) {
  Lanes counters;
  Lanes nonces[3];
  for (std::size_t lane = 0; lane < ChaCha20Bits::kLanes; ++lane) {
    counters[lane] = counter + static_cast<std::uint32_t>(lane);
  }
  for (int i = 0; i < 3; ++i) nonces[i] = Lanes{} + load_le32(nonce.data() + 4 * i);
  chacha20_lanes(key, counters, nonces, out);
}

// One block, lane 0 of out, in plain 32-bit arithmetic: the first refill of a stream. A row of
// one coordinate (a wide model's tables) needs about half a block; computing eight would cost
// several times its draws.
void chacha20_one_block(const ChaCha20Key& key, std::uint32_t counter, const ChaCha20Nonce& nonce,
                        ChaCha20Lanes& out) {
  std::uint32_t initial[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
  for (int i = 0; i < 8; ++i) initial[4 + i] = load_le32(key.data() + 4 * i);
  initial[12] = counter;
  for (int i = 0; i < 3; ++i) initial[13 + i] = load_le32(nonce.data() + 4 * i);
  std::uint32_t s[16];
  for (int i = 0; i < 16; ++i) s[i] = initial[i];
  for (int i = 0; i < 10; ++i) {
    quarter_round(s[0], s[4], s[8], s[12]);
    quarter_round(s[1], s[5], s[9], s[13]);
    quarter_round(s[2], s[6], s[10], s[14]);
    quarter_round(s[3], s[7], s[11], s[15]);
    quarter_round(s[0], s[5], s[10], s[15]);
    quarter_round(s[1], s[6], s[11], s[12]);
    quarter_round(s[2], s[7], s[8], s[13]);
    quarter_round(s[3], s[4], s[9], s[14]);
  }
  for (int i = 0; i < 16; ++i) out[i][0] = s[i] + initial[i];
  volatile std::uint32_t* wipe = s;
  for (int i = 0; i < 16; ++i) wipe[i] = 0;
}

}  // namespace

ChaCha20Block chacha20_block(const ChaCha20Key& key, std::uint32_t counter,
                             const ChaCha20Nonce& nonce) {
  ChaCha20Lanes words;
  chacha20_one_block(key, counter, nonce, words);
  ChaCha20Block out;
  for (int i = 0; i < 16; ++i) {
    for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<std::uint8_t>(words[i][0] >> (8 * b));
  }
  volatile std::uint32_t* wipe = &words[0][0];
  for (std::size_t i = 0; i < 16; ++i) wipe[i * ChaCha20Bits::kLanes] = 0;
  return out;
}

void chacha20_first_blocks(const ChaCha20Key& key, const ChaCha20Nonce (&nonces)[kChaCha20Lanes],
                           ChaCha20Lanes& out) {
  Lanes nonce_words[3];
  for (std::size_t lane = 0; lane < kChaCha20Lanes; ++lane) {
    for (int i = 0; i < 3; ++i) nonce_words[i][lane] = load_le32(nonces[lane].data() + 4 * i);
  }
  chacha20_lanes(key, Lanes{}, nonce_words, out);
}

ChaCha20Bits::ChaCha20Bits(const ChaCha20Key& key, const ChaCha20Nonce& nonce)
    : key_(key), nonce_(nonce) {}

ChaCha20Bits::ChaCha20Bits(const ChaCha20Key& key, const ChaCha20Nonce& nonce,
                           const ChaCha20Lanes& first_blocks, std::size_t lane)
    : key_(key), nonce_(nonce), next_counter_(1), available_(8), filled_lanes_(1) {
  for (int i = 0; i < 16; ++i) state_[i][0] = first_blocks[i][lane];
}

ChaCha20Bits::~ChaCha20Bits() {
  // volatile stores: the compiler may not drop the wipe of memory about to be freed.
  volatile std::uint8_t* key = key_.data();
  for (std::size_t i = 0; i < key_.size(); ++i) key[i] = 0;
  volatile std::uint32_t* words = &state_[0][0];
  for (std::size_t i = 0; i < 16; ++i) {
    for (std::size_t lane = 0; lane < filled_lanes_; ++lane) words[i * kLanes + lane] = 0;
  }
}

void ChaCha20Bits::refill() {
  if (next_counter_ > UINT32_MAX) {
    throw Error("chacha20: the keystream of one nonce is exhausted (2^32 blocks)");
  }
  // The first refill computes one block, scalar: many streams (a row each) end within it. Later
  // ones compute kLanes at once.
  std::uint64_t blocks = 1;
  if (next_counter_ == 0) {
    chacha20_one_block(key_, 0, nonce_, state_);
  } else {
    chacha20_blocks(key_, static_cast<std::uint32_t>(next_counter_), nonce_, state_);
    blocks = kLanes;
  }
  filled_lanes_ = std::max<std::size_t>(filled_lanes_, static_cast<std::size_t>(blocks));
  // Blocks past counter 2^32 - 1 would repeat the stream from counter 0: never handed out.
  const std::uint64_t valid_blocks =
      std::min<std::uint64_t>(blocks, (std::uint64_t{1} << 32) - next_counter_);
  available_ = static_cast<std::size_t>(8 * valid_blocks);
  next_counter_ += valid_blocks;
  used_ = 0;
}

}  // namespace fedleaf::core
