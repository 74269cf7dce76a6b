// ChaCha20 (RFC 8439, Section 2.3), as a keyed, deterministic source of uniform bits: the same
// key and nonce give the same stream on every platform and after every restart.
//
//   ChaCha20Bits bits(key, nonce);          // key: 32 bytes, nonce: 12 bytes
//   std::int64_t y = noise.sample(bits);    // any sampler over RandomBits
//   ChaCha20Block block = chacha20_block(key, /*counter=*/1, nonce);
//
// Written from the RFC and checked against its test vectors (Section 2.3.2, 2.4.2, Appendix A.1).
// Why a cipher: tree-aggregation noise must be the same noise every time a node is asked for it
// (tree_noise.h), so it is derived from a secret key rather than drawn and stored node by node;
// ChaCha20's keystream is indistinguishable from uniform bits to anyone without the key, which is
// what the samplers' exactness argument needs from their source.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/privacy/random_bits.h"

namespace fedleaf::core {

using ChaCha20Key = std::array<std::uint8_t, 32>;
using ChaCha20Nonce = std::array<std::uint8_t, 12>;
using ChaCha20Block = std::array<std::uint8_t, 64>;

// The block function: 64 bytes of keystream for one (key, counter, nonce).
ChaCha20Block chacha20_block(const ChaCha20Key& key, std::uint32_t counter,
                             const ChaCha20Nonce& nonce);

// Blocks computed side by side, [state word][lane] (a block's 64 bytes are its 16 state words,
// little-endian).
inline constexpr std::size_t kChaCha20Lanes = 8;
using ChaCha20Lanes = std::uint32_t[16][kChaCha20Lanes];

// The first blocks (counter 0) of kChaCha20Lanes streams under one key, lane b under nonces[b],
// for the price of one SIMD refill: a caller drawing many short streams (a row each) computes
// their first blocks together and seeds ChaCha20Bits with them (its second constructor).
void chacha20_first_blocks(const ChaCha20Key& key, const ChaCha20Nonce (&nonces)[kChaCha20Lanes],
                           ChaCha20Lanes& out);

// The keystream from block counter 0 on, read as little-endian 64-bit words. After 2^32 blocks
// (256 GiB) the counter would wrap and repeat the stream: next() throws fedleaf::Error instead.
// Holds a copy of the key; the destructor wipes it and the buffered keystream.
// The first block alone, then eight at a time (SIMD lanes, chacha20.cc), buffered: next()
// is two loads, which is what the samplers' inner loops call (issue 39: the noise pass over every
// coordinate must be cheap). The words are the same as block-at-a-time reading would give.
class ChaCha20Bits : public RandomBits {
 public:
  ChaCha20Bits(const ChaCha20Key& key, const ChaCha20Nonce& nonce);
  // The same stream, its block 0 taken from lane `lane` of first_blocks, which must be
  // chacha20_first_blocks' output for this key with `nonce` in that lane.
  ChaCha20Bits(const ChaCha20Key& key, const ChaCha20Nonce& nonce,
               const ChaCha20Lanes& first_blocks, std::size_t lane);
  ~ChaCha20Bits() override;
  ChaCha20Bits(const ChaCha20Bits&) = delete;
  ChaCha20Bits& operator=(const ChaCha20Bits&) = delete;

  std::uint64_t next() override {
    if (used_ == available_) refill();
    // A block's 64 bytes as little-endian 64-bit words: bytes 8j..8j+7 are its state words
    // 2j and 2j + 1.
    const std::size_t block = used_ / 8;
    const std::size_t j = used_ % 8;
    ++used_;
    return std::uint64_t{state_[2 * j][block]} | std::uint64_t{state_[2 * j + 1][block]} << 32;
  }

  static constexpr std::size_t kLanes = kChaCha20Lanes;  // blocks computed per refill

 private:
  void refill();

  ChaCha20Key key_;
  ChaCha20Nonce nonce_;
  // [word][block]: the buffered blocks' output words. Not zeroed: only lanes a refill or the
  // seeding constructor wrote are ever read (next() stays below available_) or wiped.
  ChaCha20Lanes state_;
  std::uint64_t next_counter_ = 0;  // the first block not yet buffered; 2^32 when exhausted
  std::size_t available_ = 0;       // words of the buffer holding keystream
  std::size_t used_ = 0;            // words already given out
  std::size_t filled_lanes_ = 0;    // lanes of state_ that ever held keystream
};

}  // namespace fedleaf::core
