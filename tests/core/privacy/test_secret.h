// A fixed tree-noise secret for tests only; a population's comes from the OS's CSPRNG
// (server/util/secure_random_bits.h). tree_noise_test.cc keeps its own: its pinned draws
// depend on it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/privacy/tree_noise.h"

namespace fedleaf::test {

inline core::TreeNoiseSecret test_secret(std::uint8_t seed) {
  core::TreeNoiseSecret secret;
  for (std::size_t i = 0; i < secret.size(); ++i) {
    secret[i] = static_cast<std::uint8_t>(seed ^ (31 * i));
  }
  return secret;
}

}  // namespace fedleaf::test
