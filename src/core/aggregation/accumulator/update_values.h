// The values array of any tensor kind: the whole tensor (dense), or the values of a SparseTensor
// or RowSparseTensor.
//
//   const DenseTensor& v = values_of(update);   // v.dtype() is the update's value dtype
#pragma once

#include "core/tensor/tensor.h"

namespace fedleaf::core {

inline const DenseTensor& values_of(const Tensor& t) {
  if (const auto* d = std::get_if<DenseTensor>(&t)) return *d;
  if (const auto* s = std::get_if<SparseTensor>(&t)) return s->values();
  return std::get<RowSparseTensor>(t).values();
}

}  // namespace fedleaf::core
