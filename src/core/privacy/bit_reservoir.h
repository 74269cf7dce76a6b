// Random bits handed out a few at a time from a RandomBits' 64-bit words, so that a sampler which
// needs one bit (a sign, a fair coin, one digit of a lazy comparison) does not spend a word on it.
//
//   BitReservoir reservoir(bits);             // bits: any RandomBits; keep it alive as long
//   std::uint64_t x = reservoir.take(13);     // 13 uniform bits, the low ones of x
//   std::int64_t y = noise.sample(reservoir);  // discrete_gaussian.h
//
// Bits come out in order: the words of the source from least significant bit up, so a given
// source always gives the same sequence of takes the same bits (the tree noise's derivation
// relies on it, tree_noise.h). Every bit is used at most once, so takes are independent and
// uniform whenever the source's words are.
#pragma once

#include <cstdint>

#include "core/privacy/random_bits.h"

namespace fedleaf::core {

class BitReservoir {
 public:
  explicit BitReservoir(RandomBits& bits) : bits_(bits) {}
  ~BitReservoir() {
    volatile std::uint64_t* wipe = &word_;  // leftover keystream bits
    *wipe = 0;
  }
  BitReservoir(const BitReservoir&) = delete;
  BitReservoir& operator=(const BitReservoir&) = delete;

  // k uniform bits, 1 <= k <= 64, as the low k bits of the result.
  std::uint64_t take(int k) {
    if (k <= available_) {
      const std::uint64_t out = k == 64 ? word_ : word_ & ((std::uint64_t{1} << k) - 1);
      word_ = k == 64 ? 0 : word_ >> k;
      available_ -= k;
      return out;
    }
    // The available bits are the low part; the rest comes from the next word's low bits.
    const std::uint64_t low = word_;
    const int have = available_;
    const int need = k - have;
    const std::uint64_t fresh = bits_.next();
    const std::uint64_t high = need == 64 ? fresh : fresh & ((std::uint64_t{1} << need) - 1);
    word_ = need == 64 ? 0 : fresh >> need;
    available_ = 64 - need;
    return low | high << have;  // have < k <= 64, so have < 64 and the shift is defined
  }

  // One uniform bit.
  bool take_bit() {
    if (available_ == 0) {
      word_ = bits_.next();
      available_ = 64;
    }
    const bool out = (word_ & 1) != 0;
    word_ >>= 1;
    --available_;
    return out;
  }

 private:
  RandomBits& bits_;
  std::uint64_t word_ = 0;
  int available_ = 0;  // bits of word_ not yet taken, its low ones
};

}  // namespace fedleaf::core
