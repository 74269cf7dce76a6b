#include "core/privacy/bit_reservoir.h"

#include <catch2/catch.hpp>
#include <cstdint>

#include "tests/core/privacy/scripted_bits.h"

using fedleaf::core::BitReservoir;
using fedleaf::test::ScriptedBits;

TEST_CASE("bit_reservoir_hands_out_the_source_bits_in_order_low_bits_first") {
  ScriptedBits source({0x0123456789abcdefULL, 0xfedcba9876543210ULL, 0x8000000000000001ULL});
  BitReservoir bits(source);
  CHECK(bits.take(4) == 0xf);
  CHECK(bits.take(8) == 0xde);
  CHECK(source.used() == 1);
  // 52 bits left of the first word, then the low 8 of the second.
  CHECK(bits.take(60) == (0x0123456789abcULL | (0x10ULL << 52)));
  CHECK(source.used() == 2);
  CHECK(bits.take_bit() == false);  // 0x32 = 0b00110010: bits 8, 9 of the second word are 0, 1
  CHECK(bits.take_bit() == true);
  CHECK(bits.take(54) == 0xfedcba98765432ULL >> 2);
  CHECK(source.used() == 2);
  CHECK(bits.take(64) == 0x8000000000000001ULL);  // empty reservoir: a whole word
  CHECK_THROWS(bits.take_bit());                  // the script is used up
}
