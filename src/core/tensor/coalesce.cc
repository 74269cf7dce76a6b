#include "core/tensor/coalesce.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/tensor/linear_index.h"

namespace fedleaf::core {
namespace {

// Order of entries sorted by coordinate; ties keep input order so duplicate sums are
// deterministic.
std::vector<std::size_t> sorted_order(const SparseTensor& t) {
  const std::size_t nnz = t.nnz();
  std::vector<std::size_t> order(nnz);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (auto strides = row_major_strides(t.dense_shape())) {
    std::vector<std::pair<std::uint64_t, std::size_t>> keyed(nnz);
    for (std::size_t i = 0; i < nnz; ++i) keyed[i] = {linear_index(t.indices(), i, *strides), i};
    std::sort(keyed.begin(), keyed.end());
    for (std::size_t i = 0; i < nnz; ++i) order[i] = keyed[i].second;
    return order;
  }
  const std::size_t rank = t.rank();
  const std::int64_t* idx = t.indices().data();
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::lexicographical_compare(idx + a * rank, idx + (a + 1) * rank, idx + b * rank,
                                        idx + (b + 1) * rank);
  });
  return order;
}

bool same_coordinate(const CooIndices& idx, std::size_t rank, std::size_t a, std::size_t b) {
  return std::equal(idx.data() + a * rank, idx.data() + (a + 1) * rank, idx.data() + b * rank);
}

}  // namespace

SparseTensor coalesce(const SparseTensor& tensor) {
  const std::size_t rank = tensor.rank();
  const std::vector<std::size_t> order = sorted_order(tensor);
  const CooIndices& idx = tensor.indices();
  return visit_dtype(tensor.values().dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = tensor.values().data<T>();
    std::vector<std::size_t> firsts;
    std::vector<T> sums;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const std::size_t e = order[k];
      if (!firsts.empty() && same_coordinate(idx, rank, firsts.back(), e)) {
        sums.back() = static_cast<T>(sums.back() + in[e]);
      } else {
        firsts.push_back(e);
        sums.push_back(in[e]);
      }
    }
    CooIndices out_idx = CooIndices::from_shape({firsts.size(), rank});
    for (std::size_t k = 0; k < firsts.size(); ++k) {
      std::copy_n(idx.data() + firsts[k] * rank, rank, out_idx.data() + k * rank);
    }
    xt::xarray<T> vals = xt::xarray<T>::from_shape({sums.size()});
    std::copy(sums.begin(), sums.end(), vals.begin());
    SparseTensor out(std::move(out_idx), DenseTensor(std::move(vals)), tensor.dense_shape());
    out.set_index_dtype(tensor.index_dtype());
    return out;
  });
}

RowSparseTensor coalesce(const RowSparseTensor& tensor) {
  const std::size_t nrows = tensor.num_rows();
  const std::size_t row = tensor.row_size();
  std::vector<std::pair<std::int64_t, std::size_t>> keyed(nrows);
  for (std::size_t i = 0; i < nrows; ++i) keyed[i] = {tensor.indices()(i), i};
  std::sort(keyed.begin(), keyed.end());
  std::size_t unique = 0;
  for (std::size_t k = 0; k < nrows; ++k) {
    if (k == 0 || keyed[k].first != keyed[k - 1].first) ++unique;
  }
  return visit_dtype(tensor.values().dtype(), [&](auto tag) {
    using T = decltype(tag);
    Shape vshape = tensor.values().shape();
    vshape[0] = unique;
    xt::xarray<T> vals = xt::xarray<T>::from_shape(vshape);
    RowIndices rows = RowIndices::from_shape({unique});
    const T* in = tensor.values().data<T>();
    T* out = vals.data();
    std::size_t u = 0;
    for (std::size_t k = 0; k < nrows; ++k) {
      const T* src = in + keyed[k].second * row;
      if (k > 0 && keyed[k].first == keyed[k - 1].first) {
        T* dst = out + (u - 1) * row;
        for (std::size_t j = 0; j < row; ++j) dst[j] = static_cast<T>(dst[j] + src[j]);
      } else {
        rows(u) = keyed[k].first;
        std::copy_n(src, row, out + u * row);
        ++u;
      }
    }
    RowSparseTensor result(std::move(rows), DenseTensor(std::move(vals)), tensor.dense_shape());
    result.set_index_dtype(tensor.index_dtype());
    return result;
  });
}

bool is_canonical(const SparseTensor& tensor) {
  const std::size_t rank = tensor.rank();
  const std::int64_t* idx = tensor.indices().data();
  for (std::size_t i = 1; i < tensor.nnz(); ++i) {
    if (!std::lexicographical_compare(idx + (i - 1) * rank, idx + i * rank, idx + i * rank,
                                      idx + (i + 1) * rank)) {
      return false;
    }
  }
  return true;
}

bool is_canonical(const RowSparseTensor& tensor) {
  for (std::size_t i = 1; i < tensor.num_rows(); ++i) {
    if (tensor.indices()(i - 1) >= tensor.indices()(i)) return false;
  }
  return true;
}

}  // namespace fedleaf::core
