#include "core/dtype.h"

#include "core/error.h"

namespace fedleaf::core {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return 4;
    case DType::F64:
      return 8;
    case DType::I32:
      return 4;
    case DType::I64:
      return 8;
    case DType::U8:
      return 1;
    case DType::F16:
    case DType::BF16:
      return 2;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32:
      return "F32";
    case DType::F64:
      return "F64";
    case DType::I32:
      return "I32";
    case DType::I64:
      return "I64";
    case DType::U8:
      return "U8";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
  }
  return "?";
}

DType parse_dtype(std::string_view name, std::string_view context) {
  for (DType d :
       {DType::F32, DType::F64, DType::I32, DType::I64, DType::U8, DType::F16, DType::BF16}) {
    if (dtype_name(d) == name) return d;
  }
  throw InvalidInput(std::string(context) + ": unknown dtype '" + std::string(name) +
                     "' (supported: F32, F64, I32, I64, U8, and F16, BF16 in files)");
}

bool is_floating(DType dtype) { return dtype == DType::F32 || dtype == DType::F64; }

bool is_half_float(DType dtype) { return dtype == DType::F16 || dtype == DType::BF16; }

bool is_index_dtype(DType dtype) { return dtype == DType::I32 || dtype == DType::I64; }

}  // namespace fedleaf::core
