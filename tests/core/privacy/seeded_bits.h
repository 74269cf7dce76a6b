// A deterministic RandomBits for tests only (xoshiro256** seeded by splitmix64): fixed seeds make
// the statistical tests reproducible. Never used outside tests: the server's noise comes from
// server/util/secure_random_bits.h.
#pragma once

#include <cstdint>

#include "core/privacy/random_bits.h"

namespace fedleaf::test {

class SeededBits : public core::RandomBits {
 public:
  explicit SeededBits(std::uint64_t seed) {
    for (std::uint64_t& s : state_) {
      seed += 0x9e3779b97f4a7c15ULL;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }

  std::uint64_t next() override {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t state_[4];
};

}  // namespace fedleaf::test
