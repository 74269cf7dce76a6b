#include "core/to_dense.h"

#include "core/linear_index.h"

namespace fedleaf::core {
namespace {

Shape checked_dense_shape(const DenseShape& dense_shape) {
  Shape shape(dense_shape.begin(), dense_shape.end());
  if (shape_element_count(shape, "to_dense") > kMaxToDenseElements) {
    throw InvalidInput("to_dense: dense_shape " + shape_to_string(dense_shape) +
                       " is too large to materialize (limit " +
                       std::to_string(kMaxToDenseElements) + " elements)");
  }
  return shape;
}

}  // namespace

DenseTensor to_dense(const SparseTensor& tensor) {
  DenseTensor out =
      DenseTensor::zeros(tensor.values().dtype(), checked_dense_shape(tensor.dense_shape()));
  const auto strides = *row_major_strides(tensor.dense_shape());
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* dst = out.data<T>();
    const T* src = tensor.values().data<T>();
    for (std::size_t i = 0; i < tensor.nnz(); ++i) {
      T& cell = dst[linear_index(tensor.indices(), i, strides)];
      cell = static_cast<T>(cell + src[i]);
    }
  });
  return out;
}

DenseTensor to_dense(const RowSparseTensor& tensor) {
  DenseTensor out =
      DenseTensor::zeros(tensor.values().dtype(), checked_dense_shape(tensor.dense_shape()));
  const std::size_t row = tensor.row_size();
  visit_dtype(out.dtype(), [&](auto tag) {
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

}  // namespace fedleaf::core
