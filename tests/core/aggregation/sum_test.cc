#include <catch2/catch.hpp>

#include "tests/core/aggregation/aggregation_test_util.h"

namespace fedleaf {
namespace {

TEST_CASE("sum_matches_dense_reference_for_every_encoding_and_dtype") {
  test::check_operator_properties({SparseSumOperator::kSum, 0.0}, 101);
}

TEST_CASE("sum_adds_overlapping_indices_and_keeps_disjoint_ones") {
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kSum}, UpdateEncoding::kCoo, DType::F32,
                                 {10});
  acc.add(core::SparseTensor(core::CooIndices{{1}, {4}},
                             core::DenseTensor(xt::xarray<float>{1.f, 2.f}), {10}),
          3.0);
  acc.add(core::SparseTensor(core::CooIndices{{4}, {7}},
                             core::DenseTensor(xt::xarray<float>{5.f, -1.f}), {10}),
          1.0);
  const auto result = std::get<core::SparseTensor>(acc.finalize());
  CHECK(result.indices() == core::CooIndices{{1}, {4}, {7}});
  CHECK(result.values() == core::DenseTensor(xt::xarray<float>{1.f, 7.f, -1.f}));
  CHECK(result.dense_shape() == core::DenseShape{10});
}

}  // namespace
}  // namespace fedleaf
