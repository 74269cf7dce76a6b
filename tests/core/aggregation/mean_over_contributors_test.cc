#include <catch2/catch.hpp>

#include "tests/core/aggregation/aggregation_test_util.h"

namespace fedleaf {
namespace {

TEST_CASE("mean_over_contributors_matches_dense_reference_for_every_encoding_and_dtype") {
  test::check_operator_properties({SparseSumOperator::kMeanOverContributors, 0.0}, 303);
}

TEST_CASE("mean_over_contributors_divides_each_row_by_the_weights_of_clients_that_sent_it") {
  core::SparseSumAccumulator acc("emb/weight", {SparseSumOperator::kMeanOverContributors},
                                 UpdateEncoding::kRowSparse, DType::F32, {100, 2});
  // Row 7 is sent by A (weight 1) and B (weight 3); row 50 only by B.
  acc.add(core::RowSparseTensor(core::RowIndices{7},
                                core::DenseTensor(xt::xarray<float>{{4.f, 8.f}}), {100, 2}),
          1.0);
  acc.add(core::RowSparseTensor(core::RowIndices{50, 7},
                                core::DenseTensor(xt::xarray<float>{{1.f, -1.f}, {0.f, 0.f}}),
                                {100, 2}),
          3.0);
  const auto result = std::get<core::RowSparseTensor>(acc.finalize());
  CHECK(result.indices() == core::RowIndices{7, 50});
  // Row 7: (1·[4, 8] + 3·[0, 0]) / 4; row 50: 3·[1, -1] / 3, not shrunk by A's absence.
  CHECK(result.values() == core::DenseTensor(xt::xarray<float>{{1.f, 2.f}, {1.f, -1.f}}));
}

TEST_CASE("mean_over_contributors_counts_a_client_once_for_duplicate_indices") {
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kMeanOverContributors},
                                 UpdateEncoding::kCoo, DType::F64, {3, 3});
  acc.add(core::SparseTensor(core::CooIndices{{1, 1}, {1, 1}},
                             core::DenseTensor(xt::xarray<double>{2.0, 4.0}), {3, 3}),
          2.0);
  acc.add(core::SparseTensor(core::CooIndices{{1, 1}}, core::DenseTensor(xt::xarray<double>{0.0}),
                             {3, 3}),
          2.0);
  const auto result = std::get<core::SparseTensor>(acc.finalize());
  // (2·(2+4) + 2·0) / (2+2): the duplicate pair is one contribution of 6.
  CHECK(result.values() == core::DenseTensor(xt::xarray<double>{3.0}));
}

}  // namespace
}  // namespace fedleaf
