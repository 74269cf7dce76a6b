// A row-sparse component tuple, what tf.IndexedSlices is: whole rows of a tensor.
// indices [nrows] (row numbers), values [nrows, dense_shape[1:]...], dense_shape.
//
//   RowSparseTensor g(RowIndices{7, 42}, DenseTensor::zeros(DType::F32, {2, 16}),
//                     {262144, 16}, "emb/weight");
//
// The constructor enforces the shape rules and row ranges; canonical means rows sorted, unique.
#pragma once

#include <string>

#include "core/tensor/sparse_tensor.h"

namespace fedleaf::core {

class RowSparseTensor {
 public:
  // Throws InvalidInput naming `name` when dense_shape is empty or negative, values do not have
  // shape [nrows, dense_shape[1:]...], or a row index is outside [0, dense_shape[0]).
  RowSparseTensor(RowIndices indices, DenseTensor values, DenseShape dense_shape,
                  const std::string& name = "row-sparse tensor");

  const RowIndices& indices() const { return indices_; }
  const DenseTensor& values() const { return values_; }
  DenseTensor& values() { return values_; }
  const DenseShape& dense_shape() const { return dense_shape_; }
  std::size_t num_rows() const { return indices_.size(); }
  // Elements per row: the product of dense_shape[1:].
  std::size_t row_size() const;

  DType index_dtype() const { return index_dtype_; }
  void set_index_dtype(DType dtype);

  friend bool operator==(const RowSparseTensor& a, const RowSparseTensor& b);

 private:
  RowIndices indices_;
  DenseTensor values_;
  DenseShape dense_shape_;
  DType index_dtype_ = DType::I64;
};

}  // namespace fedleaf::core
