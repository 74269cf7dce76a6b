// Canonical form of sparse component tuples: indices sorted (row-major) and unique.
//
//   SparseTensor c = coalesce(s);     // sorts, sums the values of duplicate indices
//   assert(is_canonical(c));
//
// Duplicates are summed in the order they appear in the input, so coalesce is deterministic.
// Explicit zeros are kept: absence and a stored zero mean different things to the
// mean_over_contributors aggregator.
#pragma once

#include "core/tensor/row_sparse_tensor.h"
#include "core/tensor/sparse_tensor.h"

namespace fedleaf::core {

SparseTensor coalesce(const SparseTensor& tensor);
RowSparseTensor coalesce(const RowSparseTensor& tensor);

bool is_canonical(const SparseTensor& tensor);
bool is_canonical(const RowSparseTensor& tensor);

}  // namespace fedleaf::core
