// A small seeded generator (SplitMix64) whose streams are identical on every platform.
//
//   SeededRandom rng(seed);
//   std::uint64_t i = rng.below(n);     // uniform in [0, n), unbiased
//   float u = rng.uniform();            // uniform in [0, 1), 24 random bits
//
// The standard library's distributions and std::shuffle are implementation-defined (libstdc++
// natively, libc++ under Emscripten), so shuffling and initialization use this instead: a leaf in
// a browser and the server draw the same model from the same seed.
#pragma once

#include <cstdint>

namespace fedleaf::core {

class SeededRandom {
 public:
  explicit SeededRandom(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, n) for n > 0, by rejection of the biased low range.
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t threshold = (0 - n) % n;
    for (;;) {
      const std::uint64_t r = next();
      if (r >= threshold) return r % n;
    }
  }

  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }

 private:
  std::uint64_t state_;
};

// Mixes two 64-bit values into one seed (e.g. a shuffle seed and an epoch number).
inline std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) {
  SeededRandom r(a ^ (b * 0xd1b54a32d192ed03ull));
  r.next();
  return r.next();
}

}  // namespace fedleaf::core
