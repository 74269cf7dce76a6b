// Random tensors for property tests; deterministic for a given seed.
#pragma once

#include <cstdint>
#include <random>

#include "core/tensor/row_sparse_tensor.h"
#include "core/tensor/sparse_tensor.h"

namespace fedleaf::test {

// COO tuple of `nnz` random entries in `dense_shape` (duplicates likely when nnz is large
// relative to the shape); values uniform in [-1, 1].
template <class T>
core::SparseTensor random_coo(std::mt19937_64& rng, const core::DenseShape& dense_shape,
                              std::size_t nnz) {
  core::CooIndices idx = core::CooIndices::from_shape({nnz, dense_shape.size()});
  xt::xarray<T> vals = xt::xarray<T>::from_shape({nnz});
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  for (std::size_t i = 0; i < nnz; ++i) {
    for (std::size_t d = 0; d < dense_shape.size(); ++d) {
      idx(i, d) = std::uniform_int_distribution<std::int64_t>(0, dense_shape[d] - 1)(rng);
    }
    vals(i) = static_cast<T>(value(rng));
  }
  return core::SparseTensor(std::move(idx), core::DenseTensor(std::move(vals)), dense_shape);
}

template <class T>
core::RowSparseTensor random_row_sparse(std::mt19937_64& rng, const core::DenseShape& dense_shape,
                                        std::size_t nrows) {
  core::Shape vshape{nrows};
  std::size_t row = 1;
  for (std::size_t d = 1; d < dense_shape.size(); ++d) {
    vshape.push_back(static_cast<std::size_t>(dense_shape[d]));
    row *= static_cast<std::size_t>(dense_shape[d]);
  }
  core::RowIndices rows = core::RowIndices::from_shape({nrows});
  xt::xarray<T> vals = xt::xarray<T>::from_shape(vshape);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  for (std::size_t i = 0; i < nrows; ++i) {
    rows(i) = std::uniform_int_distribution<std::int64_t>(0, dense_shape[0] - 1)(rng);
  }
  for (std::size_t i = 0; i < nrows * row; ++i) vals.data()[i] = static_cast<T>(value(rng));
  return core::RowSparseTensor(std::move(rows), core::DenseTensor(std::move(vals)), dense_shape);
}

}  // namespace fedleaf::test
