// Element types of tensors, named as in the safetensors format.
//
//   DType t = parse_dtype("F32");      // throws InvalidInput for unknown names
//   dtype_size(t) == 4; dtype_name(t) == "F32";
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fedleaf::core {

enum class DType { F32, F64, I32, I64, U8 };

std::size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
// `context` names the field being parsed, for the error message.
DType parse_dtype(std::string_view name, std::string_view context = "dtype");
bool is_floating(DType dtype);
bool is_index_dtype(DType dtype);  // I32 or I64

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
  }
  return fn(float{});
}

}  // namespace fedleaf::core
