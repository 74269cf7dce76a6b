// Dense materialization of sparse tuples: the reference the tests compare sparse paths with.
// Test code only — the point of fedleaf is never to do this on a hot path.
//
//   DenseTensor d = fedleaf::test::to_dense(sparse);   // duplicates summed, untouched zero
#pragma once

#include <string>

#include "core/error.h"
#include "core/tensor/dense_tensor.h"
#include "core/tensor/linear_index.h"
#include "core/tensor/row_sparse_tensor.h"
#include "core/tensor/sparse_tensor.h"

namespace fedleaf::test {

// Refuses (InvalidInput) tensors of more than this many elements.
inline constexpr std::size_t kMaxToDenseElements = std::size_t{1} << 28;

namespace to_dense_detail {

inline core::Shape checked_dense_shape(const core::DenseShape& dense_shape) {
  core::Shape shape(dense_shape.begin(), dense_shape.end());
  if (core::shape_element_count(shape, "to_dense") > kMaxToDenseElements) {
    throw InvalidInput("to_dense: dense_shape " + core::shape_to_string(dense_shape) +
                       " is too large to materialize (limit " +
                       std::to_string(kMaxToDenseElements) + " elements)");
  }
  return shape;
}

}  // namespace to_dense_detail

inline core::DenseTensor to_dense(const core::SparseTensor& tensor) {
  core::DenseTensor out = core::DenseTensor::zeros(
      tensor.values().dtype(), to_dense_detail::checked_dense_shape(tensor.dense_shape()));
  const auto strides = *core::row_major_strides(tensor.dense_shape());
  core::visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    const T* src = tensor.values().data<T>();
    for (std::size_t i = 0; i < tensor.nnz(); ++i) {
      T& cell = dst[core::linear_index(tensor.indices(), i, strides)];
      cell = static_cast<T>(cell + src[i]);
    }
  });
  return out;
}

inline core::DenseTensor to_dense(const core::RowSparseTensor& tensor) {
  core::DenseTensor out = core::DenseTensor::zeros(
      tensor.values().dtype(), to_dense_detail::checked_dense_shape(tensor.dense_shape()));
  const std::size_t row = tensor.row_size();
  core::visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    const T* src = tensor.values().data<T>();
    for (std::size_t i = 0; i < tensor.num_rows(); ++i) {
      T* d = dst + static_cast<std::size_t>(tensor.indices()(i)) * row;
      for (std::size_t j = 0; j < row; ++j) d[j] = static_cast<T>(d[j] + src[i * row + j]);
    }
  });
  return out;
}

}  // namespace fedleaf::test
