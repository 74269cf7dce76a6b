#include "core/tensor/row_sparse_tensor.h"

namespace fedleaf::core {

RowSparseTensor::RowSparseTensor(RowIndices indices, DenseTensor values, DenseShape dense_shape,
                                 const std::string& name)
    : indices_(std::move(indices)),
      values_(std::move(values)),
      dense_shape_(std::move(dense_shape)) {
  if (dense_shape_.empty()) {
    throw InvalidInput(name + ": dense_shape of a row-sparse tensor needs at least one dimension");
  }
  for (std::int64_t d : dense_shape_) {
    if (d < 0) {
      throw InvalidInput(name + ": dense_shape " + shape_to_string(dense_shape_) +
                         " has a negative dimension");
    }
  }
  Shape expected{indices_.size()};
  for (std::size_t d = 1; d < dense_shape_.size(); ++d) {
    expected.push_back(static_cast<std::size_t>(dense_shape_[d]));
  }
  if (values_.shape() != expected) {
    throw InvalidInput(name + ": values must have shape " + shape_to_string(expected) +
                       " ([nrows] + dense_shape[1:]), got " + shape_to_string(values_.shape()));
  }
  for (std::size_t i = 0; i < indices_.size(); ++i) {
    const std::int64_t r = indices_(i);
    if (r < 0 || r >= dense_shape_[0]) {
      throw InvalidInput(name + ": row index " + std::to_string(r) + " at entry " +
                         std::to_string(i) + " is out of range for dense_shape " +
                         shape_to_string(dense_shape_));
    }
  }
}

std::size_t RowSparseTensor::row_size() const {
  std::size_t n = 1;
  for (std::size_t d = 1; d < dense_shape_.size(); ++d)
    n *= static_cast<std::size_t>(dense_shape_[d]);
  return n;
}

void RowSparseTensor::set_index_dtype(DType dtype) { index_dtype_ = require_index_dtype(dtype); }

bool operator==(const RowSparseTensor& a, const RowSparseTensor& b) {
  return a.dense_shape_ == b.dense_shape_ && a.indices_ == b.indices_ && a.values_ == b.values_;
}

}  // namespace fedleaf::core
