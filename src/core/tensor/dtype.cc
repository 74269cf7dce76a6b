#include "core/tensor/dtype.h"

#include <iterator>

#include "core/error.h"
#include "core/text/text_format.h"

namespace fedleaf::core {

namespace {

struct DTypeFacts {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

// One row per DType, in the enum's order.
constexpr DTypeFacts kDTypes[] = {
    {DType::F32, "F32", 4},   {DType::F64, "F64", 8}, {DType::I32, "I32", 4},
    {DType::I64, "I64", 8},   {DType::U8, "U8", 1},   {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I8, "I8", 1},   {DType::U32, "U32", 4},
};

constexpr bool rows_follow_the_enum() {
  for (std::size_t i = 0; i < std::size(kDTypes); ++i) {
    if (static_cast<std::size_t>(kDTypes[i].dtype) != i) return false;
  }
  return true;
}
static_assert(rows_follow_the_enum());

}  // namespace

std::size_t dtype_size(DType dtype) {
  const auto i = static_cast<std::size_t>(dtype);
  return i < std::size(kDTypes) ? kDTypes[i].size : 0;
}

std::string_view dtype_name(DType dtype) {
  const auto i = static_cast<std::size_t>(dtype);
  return i < std::size(kDTypes) ? kDTypes[i].name : "?";
}

DType parse_dtype(std::string_view name, std::string_view context) {
  for (const DTypeFacts& row : kDTypes) {
    if (row.name == name) return row.dtype;
  }
  throw InvalidInput(std::string(context) + ": unknown dtype " + in_quotes(name) +
                     " (supported: F32, F64, I32, I64, U8, and F16, BF16, I8, U32 in files)");
}

bool is_floating(DType dtype) { return dtype == DType::F32 || dtype == DType::F64; }

bool is_half_float(DType dtype) { return dtype == DType::F16 || dtype == DType::BF16; }

bool is_storage_only(DType dtype) {
  return is_half_float(dtype) || dtype == DType::I8 || dtype == DType::U32;
}

bool is_index_dtype(DType dtype) { return dtype == DType::I32 || dtype == DType::I64; }

DType require_index_dtype(DType dtype, std::string_view what) {
  if (!is_index_dtype(dtype)) {
    throw InvalidInput(std::string(what) + " must be I32 or I64, got " +
                       std::string(dtype_name(dtype)));
  }
  return dtype;
}

}  // namespace fedleaf::core
