#include "core/tensor/sparse_tensor.h"

namespace fedleaf::core {

SparseTensor::SparseTensor(CooIndices indices, DenseTensor values, DenseShape dense_shape,
                           const std::string& name)
    : indices_(std::move(indices)),
      values_(std::move(values)),
      dense_shape_(std::move(dense_shape)) {
  const std::size_t nnz = indices_.shape()[0];
  const std::size_t rank = indices_.shape()[1];
  for (std::size_t d = 0; d < dense_shape_.size(); ++d) {
    if (dense_shape_[d] < 0) {
      throw InvalidInput(name + ": dense_shape " + shape_to_string(dense_shape_) +
                         " has a negative dimension");
    }
  }
  if (rank != dense_shape_.size() && nnz > 0) {
    throw InvalidInput(name + ": indices have " + std::to_string(rank) +
                       " columns but dense_shape " + shape_to_string(dense_shape_) + " has rank " +
                       std::to_string(dense_shape_.size()));
  }
  if (values_.rank() != 1 || values_.size() != nnz) {
    throw InvalidInput(name + ": values must have shape [" + std::to_string(nnz) +
                       "] (one per index row), got " + shape_to_string(values_.shape()));
  }
  for (std::size_t i = 0; i < nnz; ++i) {
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t v = indices_(i, d);
      if (v < 0 || v >= dense_shape_[d]) {
        throw InvalidInput(name + ": index " + std::to_string(v) + " at entry " +
                           std::to_string(i) + ", dimension " + std::to_string(d) +
                           " is out of range for dense_shape " + shape_to_string(dense_shape_));
      }
    }
  }
  if (nnz == 0 && rank != dense_shape_.size()) {
    indices_ = CooIndices::from_shape({0, dense_shape_.size()});
  }
}

void SparseTensor::set_index_dtype(DType dtype) { index_dtype_ = require_index_dtype(dtype); }

bool operator==(const SparseTensor& a, const SparseTensor& b) {
  return a.dense_shape_ == b.dense_shape_ && a.indices_ == b.indices_ && a.values_ == b.values_;
}

}  // namespace fedleaf::core
