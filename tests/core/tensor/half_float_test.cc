#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/tensor/half_float.h"
#include "tests/core/error_matchers.h"
#include "tests/core/raw_safetensors.h"

using namespace fedleaf::core;
using fedleaf::test::half_bytes;
using fedleaf::test::MessageContains;

namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// A binary float with `exponent_bits` and `mantissa_bits` (bias 2^(e-1) - 1) decoded from its
// fields in double arithmetic, the textbook way: the reference both conversions must equal.
double reference_value(std::uint32_t bits, int exponent_bits, int mantissa_bits) {
  const std::uint32_t mantissa = bits & ((1u << mantissa_bits) - 1);
  const std::uint32_t exponent = (bits >> mantissa_bits) & ((1u << exponent_bits) - 1);
  const bool negative = (bits >> (exponent_bits + mantissa_bits)) & 1u;
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const double fraction = std::ldexp(static_cast<double>(mantissa), -mantissa_bits);
  double magnitude;
  if (exponent == (1u << exponent_bits) - 1) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else if (exponent == 0) {
    magnitude = std::ldexp(fraction, 1 - bias);
  } else {
    magnitude = std::ldexp(1.0 + fraction, static_cast<int>(exponent) - bias);
  }
  return negative ? -magnitude : magnitude;
}

// Equal values (signed zeros told apart), or both NaN with the same sign.
bool same_float(float actual, double reference) {
  if (std::isnan(reference)) {
    return std::isnan(actual) && std::signbit(actual) == std::signbit(reference);
  }
  return static_cast<double>(actual) == reference &&
         std::signbit(actual) == std::signbit(reference);
}

// How many of the 65536 bit patterns `convert` widens to another value than the reference of
// the format with those exponent and mantissa widths.
template <class Convert>
std::size_t mismatches_of_every_pattern(Convert convert, int exponent_bits, int mantissa_bits) {
  std::size_t mismatches = 0;
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    if (!same_float(convert(bits), reference_value(bits, exponent_bits, mantissa_bits))) {
      ++mismatches;
    }
  }
  return mismatches;
}

}  // namespace

TEST_CASE("f16_to_f32_equals_the_reference_for_all_65536_patterns", "[half_float]") {
  CHECK(mismatches_of_every_pattern(f16_to_f32, 5, 10) == 0);
}

TEST_CASE("bf16_to_f32_equals_the_reference_for_all_65536_patterns", "[half_float]") {
  CHECK(mismatches_of_every_pattern(bf16_to_f32, 8, 7) == 0);
}

TEST_CASE("f16_to_f32_converts_known_bit_patterns", "[half_float]") {
  CHECK(f16_to_f32(0x3c00) == 1.0f);
  CHECK(f16_to_f32(0xc000) == -2.0f);
  CHECK(f16_to_f32(0x7bff) == 65504.0f);                      // largest finite
  CHECK(f16_to_f32(0x0400) == std::ldexp(1.0f, -14));         // smallest normal
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));         // smallest subnormal
  CHECK(f16_to_f32(0x03ff) == 1023 * std::ldexp(1.0f, -24));  // largest subnormal
  CHECK(f16_to_f32(0x3555) == 0.333251953125f);
  CHECK(bits_of(f16_to_f32(0x8000)) == 0x80000000u);  // -0
  CHECK(f16_to_f32(0x7c00) == INFINITY);
  CHECK(f16_to_f32(0xfc00) == -INFINITY);
  CHECK(bits_of(f16_to_f32(0x7e00)) == 0x7fc00000u);  // the quiet NaN, payload in the top bits
  CHECK(bits_of(f16_to_f32(0x7c01)) == 0x7f802000u);  // a signalling NaN stays one
}

TEST_CASE("bf16_to_f32_is_the_top_half_of_the_f32_bits", "[half_float]") {
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
  CHECK(bf16_to_f32(0xc000) == -2.0f);
  CHECK(bf16_to_f32(0x0001) == std::ldexp(1.0f, -133));   // smallest F32 subnormal with bf16 bits
  CHECK(bf16_to_f32(0x7f7f) == std::ldexp(255.0f, 120));  // largest finite
  CHECK(bits_of(bf16_to_f32(0x8000)) == 0x80000000u);
  CHECK(bf16_to_f32(0x7f80) == INFINITY);
  CHECK(bits_of(bf16_to_f32(0xffc1)) == 0xffc10000u);
}

TEST_CASE("widen_to_f32_reads_unaligned_little_endian_halves", "[half_float]") {
  std::vector<std::uint8_t> bytes = {0xff};  // shifts the halves to an odd address
  for (std::uint8_t b : half_bytes({0x3c00, 0xc000, 0x0001})) bytes.push_back(b);
  float out[3];
  widen_to_f32(DType::F16, bytes.data() + 1, 3, out);
  CHECK(out[0] == 1.0f);
  CHECK(out[1] == -2.0f);
  CHECK(out[2] == std::ldexp(1.0f, -24));
  widen_to_f32(DType::BF16, half_bytes({0x3f80, 0x4040}).data(), 2, out);
  CHECK(out[0] == 1.0f);
  CHECK(out[1] == 3.0f);
}

TEST_CASE("widen_to_f32_rejects_dtypes_that_are_not_16_bit_floats", "[half_float]") {
  float out[1];
  const std::uint8_t bytes[4] = {0, 0, 0, 0};
  CHECK_THROWS_MATCHES(widen_to_f32(DType::F32, bytes, 1, out), fedleaf::InvalidInput,
                       MessageContains("dtype F32 is not F16 or BF16"));
}

TEST_CASE("f32_to_f16_gives_back_every_f16_value_exactly", "[half_float]") {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const float f = f16_to_f32(h);
    if (std::isnan(f)) {
      CHECK(std::isnan(f16_to_f32(f32_to_f16(f))));
      CHECK(std::signbit(f16_to_f32(f32_to_f16(f))) == std::signbit(f));
    } else {
      REQUIRE(f32_to_f16(f) == h);
    }
  }
}

TEST_CASE("f32_to_f16_rounds_to_nearest_with_ties_to_even", "[half_float]") {
  // Between each pair of neighbouring finite F16 values (both signs), the midpoint goes to the
  // even one and the F32 values just beside it to the nearer neighbour.
  for (std::uint32_t lo = 0; lo < 0x7bff; ++lo) {
    for (const std::uint16_t sign : {0x0000, 0x8000}) {
      const auto a = static_cast<std::uint16_t>(sign | lo);
      const auto b = static_cast<std::uint16_t>(sign | (lo + 1));
      const float mid = (f16_to_f32(a) + f16_to_f32(b)) / 2;  // exact in F32
      const std::uint16_t even = (lo & 1u) ? b : a;
      REQUIRE(f32_to_f16(mid) == even);
      const float toward_b = std::nextafter(mid, f16_to_f32(b));
      const float toward_a = std::nextafter(mid, f16_to_f32(a));
      REQUIRE(f32_to_f16(toward_b) == b);
      REQUIRE(f32_to_f16(toward_a) == a);
    }
  }
}

TEST_CASE("f32_to_f16_overflows_to_infinity_and_underflows_to_signed_zero", "[half_float]") {
  CHECK(f32_to_f16(65504.0f) == 0x7bff);
  CHECK(f32_to_f16(std::nextafter(65520.0f, 0.0f)) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00);
  CHECK(f32_to_f16(-1e30f) == 0xfc00);
  CHECK(f32_to_f16(INFINITY) == 0x7c00);
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);  // a tie: to the even zero
  CHECK(f32_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
  CHECK(f32_to_f16(-1e-30f) == 0x8000);
  CHECK(f32_to_f16(1e-45f) == 0x0000);                 // an F32 subnormal
  CHECK(f32_to_f16(std::ldexp(1.0f, -14)) == 0x0400);  // the smallest normal
  CHECK((f32_to_f16(NAN) & 0x7c00) == 0x7c00);
}
