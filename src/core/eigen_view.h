// Eigen views over DenseTensor storage: xtensor is the data model, Eigen the arithmetic.
//
//   auto w = eigen_matrix<float>(weights);   // [rows, cols] row-major map, no copy
//   auto v = eigen_vector<float>(bias);      // [n] map, no copy
//   w.noalias() += x.transpose() * g;
//
// Views alias the tensor's buffer: they are valid until the tensor is resized or destroyed.
#pragma once

#include <Eigen/Core>

#include "core/dense_tensor.h"

namespace fedleaf::core {

template <class T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// A rank-2 tensor as a row-major matrix; throws InvalidInput for another rank or dtype.
template <class T>
Eigen::Map<RowMajorMatrix<T>> eigen_matrix(DenseTensor& t) {
  if (t.rank() != 2) throw InvalidInput("eigen_matrix: tensor is not rank 2");
  const Shape s = t.shape();
  return {t.data<T>(), static_cast<Eigen::Index>(s[0]), static_cast<Eigen::Index>(s[1])};
}

template <class T>
Eigen::Map<const RowMajorMatrix<T>> eigen_matrix(const DenseTensor& t) {
  if (t.rank() != 2) throw InvalidInput("eigen_matrix: tensor is not rank 2");
  const Shape s = t.shape();
  return {t.data<T>(), static_cast<Eigen::Index>(s[0]), static_cast<Eigen::Index>(s[1])};
}

// All elements of a tensor of any rank as one vector.
template <class T>
Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>> eigen_vector(DenseTensor& t) {
  return {t.data<T>(), static_cast<Eigen::Index>(t.size())};
}

template <class T>
Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>> eigen_vector(const DenseTensor& t) {
  return {t.data<T>(), static_cast<Eigen::Index>(t.size())};
}

}  // namespace fedleaf::core
