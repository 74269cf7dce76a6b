// The server's source of random bits for privacy noise: the kernel's CSPRNG through getrandom(2).
//
//   SecureRandomBits bits;
//   core::GridGaussian noise(sigma);
//   std::int64_t units = noise.sample_units(bits);
//
// Words are fetched 512 bytes per system call and handed out once each; the buffer is wiped as it
// is used, so a later memory dump holds no bits that went into released noise. Not thread-safe:
// one instance per thread (a round close draws its noise on one thread).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/privacy/random_bits.h"

namespace fedleaf::server {

class SecureRandomBits : public core::RandomBits {
 public:
  SecureRandomBits() = default;
  SecureRandomBits(const SecureRandomBits&) = delete;
  SecureRandomBits& operator=(const SecureRandomBits&) = delete;
  ~SecureRandomBits() override;

  // Throws fedleaf::Error naming getrandom and errno when the kernel gives no bits.
  std::uint64_t next() override;

 private:
  void refill();

  std::array<std::uint64_t, 64> buffer_{};
  std::size_t used_ = 64;
};

}  // namespace fedleaf::server
