// A COO sparse component tuple, what tf.SparseTensor is: indices [nnz, rank], values [nnz],
// dense_shape [rank].
//
//   xt::xtensor<std::int64_t, 2> idx = {{0, 1}, {2, 3}};
//   SparseTensor s(idx, DenseTensor(xt::xarray<float>{1.f, 2.f}), {4, 5}, "emb/grad");
//   SparseTensor c = coalesce(s);   // see coalesce.h
//
// The constructor enforces the shape rules and index ranges, so a SparseTensor is always
// well-formed; it is canonical only when its indices are also sorted and unique.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "core/tensor/dense_tensor.h"

namespace fedleaf::core {

using DenseShape = std::vector<std::int64_t>;
using CooIndices = xt::xtensor<std::int64_t, 2>;
using RowIndices = xt::xtensor<std::int64_t, 1>;

class SparseTensor {
 public:
  // Throws InvalidInput naming `name` when indices are not [nnz, rank(dense_shape)], values not
  // [nnz], a dense_shape entry is negative, or an index is outside dense_shape.
  SparseTensor(CooIndices indices, DenseTensor values, DenseShape dense_shape,
               const std::string& name = "sparse tensor");

  const CooIndices& indices() const { return indices_; }
  const DenseTensor& values() const { return values_; }
  DenseTensor& values() { return values_; }
  const DenseShape& dense_shape() const { return dense_shape_; }
  std::size_t nnz() const { return indices_.shape()[0]; }
  std::size_t rank() const { return dense_shape_.size(); }

  // dtype used for indices on the wire (I64 by default; I32 halves upload bytes).
  DType index_dtype() const { return index_dtype_; }
  void set_index_dtype(DType dtype);

  friend bool operator==(const SparseTensor& a, const SparseTensor& b);

 private:
  CooIndices indices_;
  DenseTensor values_;
  DenseShape dense_shape_;
  DType index_dtype_ = DType::I64;
};

}  // namespace fedleaf::core
