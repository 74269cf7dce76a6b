// Dense materialization of sparse tuples, for tests and small tensors only: the point of fedleaf
// is never to do this on a hot path.
//
//   DenseTensor d = to_dense(sparse);   // duplicates summed, untouched elements zero
#pragma once

#include "core/dense_tensor.h"
#include "core/row_sparse_tensor.h"
#include "core/sparse_tensor.h"

namespace fedleaf::core {

// Refuses (InvalidInput) tensors of more than this many elements.
inline constexpr std::size_t kMaxToDenseElements = std::size_t{1} << 28;

DenseTensor to_dense(const SparseTensor& tensor);
DenseTensor to_dense(const RowSparseTensor& tensor);

}  // namespace fedleaf::core
