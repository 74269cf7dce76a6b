// Element types of tensors, named as in the safetensors format.
//
//   DType t = parse_dtype("F32");      // throws InvalidInput for unknown names
//   dtype_size(t) == 4; dtype_name(t) == "F32";
//
// F16 and BF16 are storage dtypes: a safetensors file may hold them (models arrive in them),
// and reading widens them to F32 (half_float.h); no tensor holds them, so visit_dtype and the
// tensor constructors reject them. I8 is a storage dtype too: it holds int8-compressed values
// (wire/update_compression.h), which reading dequantizes to F32. U32 is a storage dtype of index
// arrays only (a sparse tuple's "<tensor>:indices", ids "u32"), which reading widens to I64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"

namespace fedleaf::core {

enum class DType { F32, F64, I32, I64, U8, F16, BF16, I8, U32 };

std::size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
// `context` names the field being parsed, for the error message.
DType parse_dtype(std::string_view name, std::string_view context = "dtype");
bool is_floating(DType dtype);      // F32 or F64: the floating-point dtypes a tensor may hold
bool is_half_float(DType dtype);    // F16 or BF16: stored only, widened to F32 when read
bool is_storage_only(DType dtype);  // F16, BF16, I8 or U32: in files only, never held by a tensor
bool is_index_dtype(DType dtype);   // I32 or I64
// Returns dtype; throws InvalidInput naming `what` unless it is I32 or I64.
DType require_index_dtype(DType dtype, std::string_view what = "index dtype");

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::F32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::F64;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::I32;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return DType::I64;
}
template <>
constexpr DType dtype_of<std::uint8_t>() {
  return DType::U8;
}

// Calls fn(T{}) with the C++ type of `dtype`; the way a runtime dtype reaches typed code.
template <class Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::F32:
      return fn(float{});
    case DType::F64:
      return fn(double{});
    case DType::I32:
      return fn(std::int32_t{});
    case DType::I64:
      return fn(std::int64_t{});
    case DType::U8:
      return fn(std::uint8_t{});
    case DType::F16:
    case DType::BF16:
    case DType::I8:
    case DType::U32:
      break;
  }
  throw InvalidInput("dtype " + std::string(dtype_name(dtype)) +
                     " is a storage dtype: it is decoded to F32 when a file is read, and no "
                     "tensor holds it");
}

}  // namespace fedleaf::core
