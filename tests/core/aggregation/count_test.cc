#include <catch2/catch.hpp>

#include "tests/core/aggregation/aggregation_test_util.h"

namespace fedleaf {
namespace {

TEST_CASE("count_matches_dense_reference_for_every_encoding_and_dtype") {
  test::check_operator_properties({SparseSumOperator::kCount, 0.0}, 404);
}

TEST_CASE("count_returns_i64_clients_per_index_counting_duplicates_once") {
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kCount}, UpdateEncoding::kCoo, DType::F32,
                                 {6});
  acc.add(core::SparseTensor(core::CooIndices{{5}, {2}, {5}},
                             core::DenseTensor(xt::xarray<float>{1.f, 1.f, 1.f}), {6}),
          10.0);
  acc.add(core::SparseTensor(core::CooIndices{{5}}, core::DenseTensor(xt::xarray<float>{0.f}), {6}),
          1.0);
  const auto result = std::get<core::SparseTensor>(acc.finalize());
  CHECK(result.indices() == core::CooIndices{{2}, {5}});
  CHECK(result.values() == core::DenseTensor(xt::xarray<std::int64_t>{1, 2}));
}

TEST_CASE("count_of_a_row_sparse_tensor_repeats_the_row_count_in_every_element") {
  core::SparseSumAccumulator acc("emb", {SparseSumOperator::kCount}, UpdateEncoding::kRowSparse,
                                 DType::F32, {4, 2});
  for (int c = 0; c < 3; ++c) {
    acc.add(core::RowSparseTensor(core::RowIndices{1},
                                  core::DenseTensor(xt::xarray<float>{{0.f, 1.f}}), {4, 2}),
            1.0);
  }
  const auto result = std::get<core::RowSparseTensor>(acc.finalize());
  CHECK(result.values() == core::DenseTensor(xt::xarray<std::int64_t>{{3, 3}}));
}

}  // namespace
}  // namespace fedleaf
