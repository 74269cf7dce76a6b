// 16-bit floats widened to F32, exactly: what reading an F16 or BF16 safetensors array does;
// and F32 narrowed to F16, what a leaf's f16 upload and an f16 model:select answer write.
//
//   float one = f16_to_f32(0x3c00);    // 1.0f
//   std::uint16_t h = f32_to_f16(1.0f); // 0x3c00
//   float two = bf16_to_f32(0x4000);   // 2.0f
//   std::vector<float> out(count);
//   widen_to_f32(DType::F16, bytes, count, out.data());   // bytes: count little-endian halves
//
// F16 is IEEE 754 binary16 (subnormals kept, infinities kept, a NaN stays a NaN with its sign
// and payload in the top mantissa bits); BF16 is the top 16 bits of an F32. Every 16-bit value
// is exactly representable in F32, so widening never rounds. Non-finite values pass through:
// the readers reject them where they reject non-finite F32 values.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor/dtype.h"

namespace fedleaf::core {

float f16_to_f32(std::uint16_t bits);
// IEEE 754 round to nearest, ties to even, with integer arithmetic only (the same bits on every
// platform and build): a value at or beyond 65520 in magnitude becomes an infinity, one below
// 2^-25 a signed zero, and a NaN stays a NaN (quiet, sign kept).
std::uint16_t f32_to_f16(float value);
float bf16_to_f32(std::uint16_t bits);

// Widens `count` little-endian 16-bit values of dtype `stored` (F16 or BF16; anything else
// throws InvalidInput) from `src` into `dst`. src needs no alignment.
void widen_to_f32(DType stored, const std::uint8_t* src, std::size_t count, float* dst);

}  // namespace fedleaf::core
