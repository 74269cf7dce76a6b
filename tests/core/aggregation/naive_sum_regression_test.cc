// The pitfall the sparse-sum family exists for (docs/design.md, problem 2): adding sparse tuples
// component-wise — concatenating indices, adding values, adding dense_shapes — is wrong.
#include <catch2/catch.hpp>

#include "tests/core/aggregation/aggregation_test_util.h"
#include "tests/core/to_dense.h"

namespace fedleaf {
namespace {

// Values of shape [n, 1].
xt::xarray<float> column(std::vector<float> v) {
  xt::xarray<float> out = xt::xarray<float>::from_shape({v.size(), 1});
  std::copy(v.begin(), v.end(), out.begin());
  return out;
}

// What the pitfall does: concatenate indices and values, add dense_shapes.
core::SparseTensor naive_component_sum(const core::SparseTensor& a, const core::SparseTensor& b) {
  core::CooIndices idx = core::CooIndices::from_shape({a.nnz() + b.nnz(), 1});
  xt::xarray<float> vals = xt::xarray<float>::from_shape({a.nnz() + b.nnz()});
  for (std::size_t i = 0; i < a.nnz(); ++i) {
    idx(i, 0) = a.indices()(i, 0);
    vals(i) = a.values().data<float>()[i];
  }
  for (std::size_t i = 0; i < b.nnz(); ++i) {
    idx(a.nnz() + i, 0) = b.indices()(i, 0);
    vals(a.nnz() + i) = b.values().data<float>()[i];
  }
  return core::SparseTensor(std::move(idx), core::DenseTensor(std::move(vals)),
                            {a.dense_shape()[0] + b.dense_shape()[0]});
}

TEST_CASE("naive_component_sum_of_sparse_tuples_is_wrong_and_sum_operator_is_right") {
  const core::SparseTensor a(core::CooIndices{{1}, {3}},
                             core::DenseTensor(xt::xarray<float>{1.f, 2.f}), {5});
  const core::SparseTensor b(core::CooIndices{{3}, {4}},
                             core::DenseTensor(xt::xarray<float>{10.f, 20.f}), {5});
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kSum}, UpdateEncoding::kCoo, DType::F32,
                                 {5});
  acc.add(a, 1.0);
  acc.add(b, 1.0);
  const auto result = std::get<core::SparseTensor>(acc.finalize());
  CHECK(result.dense_shape() == core::DenseShape{5});
  CHECK(core::is_canonical(result));
  CHECK(result.indices() == core::CooIndices{{1}, {3}, {4}});
  // Matches the sum of the dense tensors.
  const xt::xarray<float> dense_sum =
      fedleaf::test::to_dense(a).array<float>() + fedleaf::test::to_dense(b).array<float>();
  CHECK(fedleaf::test::to_dense(result) == core::DenseTensor(dense_sum));
  // The naive component-wise sum differs: doubled shape, duplicate index 3.
  const core::SparseTensor naive = naive_component_sum(a, b);
  CHECK(naive.dense_shape() != result.dense_shape());
  CHECK_FALSE(core::is_canonical(naive));
}

TEST_CASE("naive_sum_of_row_sparse_updates_differs_from_mean_over_contributors") {
  // Averaging embedding rows by the number of clients shrinks rows few clients saw.
  const core::RowSparseTensor a(core::RowIndices{0, 2}, core::DenseTensor(column({2.f, 4.f})),
                                {3, 1});
  const core::RowSparseTensor b(
      core::RowIndices{2},
      core::DenseTensor(xt::xarray<float>(std::vector<std::size_t>{1, 1}, 8.f)), {3, 1});
  core::SparseSumAccumulator acc("emb", {SparseSumOperator::kMeanOverContributors},
                                 UpdateEncoding::kRowSparse, DType::F32, {3, 1});
  acc.add(a, 1.0);
  acc.add(b, 1.0);
  const auto result = std::get<core::RowSparseTensor>(acc.finalize());
  // Row 0: only a sent it → 2 (a plain mean over both clients would give 1); row 2: (4+8)/2.
  CHECK(result.indices() == core::RowIndices{0, 2});
  CHECK(result.values() == core::DenseTensor(column({2.f, 6.f})));
}

}  // namespace
}  // namespace fedleaf
