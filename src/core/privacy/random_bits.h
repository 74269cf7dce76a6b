// A source of uniformly random 64-bit words, injected into the samplers of core (which keeps no
// generator of its own: core stays pure, and tests choose the source).
//
//   class MyBits : public RandomBits { std::uint64_t next() override { ... } };
//   DiscreteGaussian noise(100, 1);
//   std::int64_t k = noise.sample(bits);
//
// The server's noise comes from server/util/secure_random_bits.h (the OS's CSPRNG); a seeded
// generator exists only in tests (tests/core/privacy/seeded_bits.h).
#pragma once

#include <cstdint>

namespace fedleaf::core {

class RandomBits {
 public:
  virtual ~RandomBits() = default;
  // 64 independent uniform bits. Throws fedleaf::Error when the source has none to give.
  virtual std::uint64_t next() = 0;
};

}  // namespace fedleaf::core
