#include "core/features/murmur3.h"

namespace fedleaf::core {
namespace {

constexpr std::uint32_t kC1 = 0xcc9e2d51u;
constexpr std::uint32_t kC2 = 0x1b873593u;

inline std::uint32_t rotl32(std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

inline std::uint32_t scramble(std::uint32_t k) {
  k *= kC1;
  k = rotl32(k, 15);
  return k * kC2;
}

}  // namespace

std::uint32_t murmur3_32(const void* data, std::size_t size, std::uint32_t seed) {
  const auto* bytes = static_cast<const std::uint8_t*>(data);
  std::uint32_t h = seed;
  const std::size_t blocks = size / 4;
  for (std::size_t i = 0; i < blocks; ++i) {
    const std::uint8_t* p = bytes + 4 * i;
    const std::uint32_t k =
        static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
        (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
    h ^= scramble(k);
    h = rotl32(h, 13);
    h = h * 5u + 0xe6546b64u;
  }
  const std::uint8_t* tail = bytes + 4 * blocks;
  std::uint32_t k = 0;
  switch (size & 3u) {
    case 3:
      k ^= static_cast<std::uint32_t>(tail[2]) << 16;
      [[fallthrough]];
    case 2:
      k ^= static_cast<std::uint32_t>(tail[1]) << 8;
      [[fallthrough]];
    case 1:
      k ^= tail[0];
      h ^= scramble(k);
      break;
    default:
      break;
  }
  h ^= static_cast<std::uint32_t>(size);
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

}  // namespace fedleaf::core
