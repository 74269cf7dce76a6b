#include <catch2/catch.hpp>

#include "core/train/murmur3.h"

using namespace fedleaf::core;

TEST_CASE("murmur3_32_matches_published_reference_values", "[murmur3]") {
  CHECK(murmur3_32("", 0) == 0u);
  CHECK(murmur3_32("", 1) == 0x514e28b7u);
  CHECK(murmur3_32("", 0xffffffffu) == 0x81f16f39u);
  CHECK(murmur3_32("test", 0) == 0xba6bd213u);
  CHECK(murmur3_32("Hello, world!", 1234) == 0xfaf6cdb3u);
  CHECK(murmur3_32("The quick brown fox jumps over the lazy dog", 0) == 0x2e4ff723u);
  CHECK(murmur3_32("aaaa", 0x9747b28cu) == 0x5a97808au);
  CHECK(murmur3_32("abc", 0) == 0xb3dd93fau);
}

TEST_CASE("murmur3_32_covers_every_tail_length", "[murmur3]") {
  // Tails of 1, 2 and 3 bytes must each change the hash.
  CHECK(murmur3_32("a", 0) != murmur3_32("b", 0));
  CHECK(murmur3_32("ab", 0) != murmur3_32("ac", 0));
  CHECK(murmur3_32("abcde", 0) != murmur3_32("abcdf", 0));
  CHECK(murmur3_32("abcdefg", 0) != murmur3_32("abcdefh", 0));
}
