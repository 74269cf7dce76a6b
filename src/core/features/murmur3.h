// MurmurHash3, x86 32-bit variant: the stable hash of fedleaf's feature hashing.
//
//   std::uint32_t h = murmur3_32("viagra", 0);        // 0..2^32-1, same on every platform
//   std::uint32_t bucket = h % num_buckets;
//
// This is Austin Appleby's public-domain algorithm (MurmurHash3_x86_32): 4-byte blocks read
// little-endian, constants c1 = 0xcc9e2d51, c2 = 0x1b873593, then the fmix32 finalizer. The JS
// fixture tooling (tests/fixtures/make_spamassassin_fixture.mjs) implements the same function,
// and a test checks the published reference values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fedleaf::core {

std::uint32_t murmur3_32(const void* data, std::size_t size, std::uint32_t seed);

inline std::uint32_t murmur3_32(std::string_view text, std::uint32_t seed) {
  return murmur3_32(text.data(), text.size(), seed);
}

}  // namespace fedleaf::core
