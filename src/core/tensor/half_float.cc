#include "core/tensor/half_float.h"

#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"

namespace fedleaf::core {
namespace {

float from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace

float f16_to_f32(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  const std::uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return from_bits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return from_bits(sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa × 2^-24, exact in F32 (a normal F32 for every mantissa).
  const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  return sign ? -magnitude : magnitude;
}

std::uint16_t f32_to_f16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t exponent = (bits >> 23) & 0xffu;
  const std::uint32_t mantissa = bits & 0x7fffffu;
  if (exponent == 0xff) {
    return static_cast<std::uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u | (mantissa >> 13) : 0));
  }
  // The value as an F16 exponent and a 24-bit significand (implicit bit included).
  const int half_exponent = static_cast<int>(exponent) - 127 + 15;
  if (half_exponent >= 0x1f) return static_cast<std::uint16_t>(sign | 0x7c00u);
  std::uint32_t significand = mantissa | (exponent ? 0x800000u : 0);
  // Bits of the significand dropped: 13 for a normal F16, more for a subnormal one.
  const int shift = half_exponent >= 1 ? 13 : 14 - half_exponent;
  if (shift > 24) return sign;
  const std::uint32_t kept = significand >> shift;
  const std::uint32_t rest = significand & ((1u << shift) - 1);
  const std::uint32_t half = 1u << (shift - 1);
  const std::uint32_t rounded = kept + (rest > half || (rest == half && (kept & 1u)) ? 1 : 0);
  if (half_exponent >= 1) {
    // A carry out of the mantissa moves to the next exponent, up to infinity: still correct.
    return static_cast<std::uint16_t>(
        sign + ((static_cast<std::uint32_t>(half_exponent) << 10) + (rounded - 0x400u)));
  }
  // Subnormal (exponent field 0); a carry into bit 10 makes it the smallest normal, correctly.
  return static_cast<std::uint16_t>(sign | rounded);
}

float bf16_to_f32(std::uint16_t bits) { return from_bits(static_cast<std::uint32_t>(bits) << 16); }

void widen_to_f32(DType stored, const std::uint8_t* src, std::size_t count, float* dst) {
  if (!is_half_float(stored)) {
    throw InvalidInput("widen_to_f32: dtype " + std::string(dtype_name(stored)) +
                       " is not F16 or BF16");
  }
  const auto widen = stored == DType::F16 ? f16_to_f32 : bf16_to_f32;
  for (std::size_t i = 0; i < count; ++i) {
    const auto bits = static_cast<std::uint16_t>(src[2 * i] | (src[2 * i + 1] << 8));
    dst[i] = widen(bits);
  }
}

}  // namespace fedleaf::core
