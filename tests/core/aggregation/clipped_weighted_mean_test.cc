#include <catch2/catch.hpp>

#include "tests/core/aggregation/aggregation_test_util.h"

namespace fedleaf {
namespace {

TEST_CASE("clipped_weighted_mean_matches_dense_reference_for_every_encoding_and_dtype") {
  test::check_operator_properties({SparseSumOperator::kClippedWeightedMean, 0.7}, 505);
  test::check_operator_properties({SparseSumOperator::kClippedWeightedMean, 3.0}, 506);
}

TEST_CASE("clipped_weighted_mean_scales_only_updates_whose_norm_exceeds_the_bound") {
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kClippedWeightedMean, 1.0},
                                 UpdateEncoding::kCoo, DType::F64, {4});
  // ‖[3, 4]‖ = 5 → scaled by 1/5; ‖[0.5]‖ = 0.5 → unchanged.
  acc.add(core::SparseTensor(core::CooIndices{{0}, {1}},
                             core::DenseTensor(xt::xarray<double>{3.0, 4.0}), {4}),
          1.0);
  acc.add(
      core::SparseTensor(core::CooIndices{{3}}, core::DenseTensor(xt::xarray<double>{0.5}), {4}),
      1.0);
  const auto result = std::get<core::SparseTensor>(acc.finalize());
  CHECK(result.indices() == core::CooIndices{{0}, {1}, {3}});
  const double* v = result.values().data<double>();
  CHECK(v[0] == Approx(0.3).epsilon(1e-15));
  CHECK(v[1] == Approx(0.4).epsilon(1e-15));
  CHECK(v[2] == Approx(0.25).epsilon(1e-15));
}

TEST_CASE("clipped_weighted_mean_measures_the_norm_after_summing_duplicates") {
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kClippedWeightedMean, 1.0},
                                 UpdateEncoding::kCoo, DType::F64, {4});
  // Entries +3 and -3 at index 2 sum to 0: the update's norm is 0.8, below the bound.
  acc.add(core::SparseTensor(core::CooIndices{{2}, {1}, {2}},
                             core::DenseTensor(xt::xarray<double>{3.0, 0.8, -3.0}), {4}),
          2.0);
  const auto result = std::get<core::SparseTensor>(acc.finalize());
  CHECK(result.values() == core::DenseTensor(xt::xarray<double>{0.8, 0.0}));
}

}  // namespace
}  // namespace fedleaf
