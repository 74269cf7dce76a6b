#include <catch2/catch.hpp>

#include "tests/core/aggregation/aggregation_test_util.h"

namespace fedleaf {
namespace {

TEST_CASE("weighted_mean_matches_dense_reference_for_every_encoding_and_dtype") {
  test::check_operator_properties({SparseSumOperator::kWeightedMean, 0.0}, 202);
}

TEST_CASE("weighted_mean_counts_absent_indices_as_zero_in_the_total_weight") {
  core::SparseSumAccumulator acc("w", {SparseSumOperator::kWeightedMean}, UpdateEncoding::kCoo,
                                 DType::F64, {4});
  // Client A (weight 1) sends index 0 only; client B (weight 3) sends index 2 only.
  acc.add(
      core::SparseTensor(core::CooIndices{{0}}, core::DenseTensor(xt::xarray<double>{4.0}), {4}),
      1.0);
  acc.add(
      core::SparseTensor(core::CooIndices{{2}}, core::DenseTensor(xt::xarray<double>{2.0}), {4}),
      3.0);
  const auto result = std::get<core::SparseTensor>(acc.finalize());
  CHECK(result.indices() == core::CooIndices{{0}, {2}});
  // (1·4)/(1+3) and (3·2)/(1+3).
  CHECK(result.values() == core::DenseTensor(xt::xarray<double>{1.0, 1.5}));
  CHECK(acc.total_weight() == 4.0);
}

TEST_CASE("weighted_mean_of_no_updates_is_zero_for_dense_and_empty_for_sparse") {
  core::SparseSumAccumulator dense("d", {SparseSumOperator::kWeightedMean}, UpdateEncoding::kDense,
                                   DType::F32, {2, 2});
  CHECK(std::get<core::DenseTensor>(dense.finalize()) ==
        core::DenseTensor::zeros(DType::F32, {2, 2}));
  core::SparseSumAccumulator rows("r", {SparseSumOperator::kWeightedMean},
                                  UpdateEncoding::kRowSparse, DType::F32, {5, 3});
  CHECK(std::get<core::RowSparseTensor>(rows.finalize()).num_rows() == 0);
}

}  // namespace
}  // namespace fedleaf
