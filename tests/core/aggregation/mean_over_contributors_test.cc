#include <catch2/catch.hpp>

#include "core/wire/safetensors.h"
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

namespace fedleaf {
namespace {

core::RowSparseTensor rows(std::vector<std::int64_t> ids, float value) {
  core::RowIndices idx = core::RowIndices::from_shape({ids.size()});
  for (std::size_t i = 0; i < ids.size(); ++i) idx(i) = ids[i];
  xt::xarray<float> v = xt::xarray<float>::from_shape({ids.size(), 2});
  v.fill(value);
  return core::RowSparseTensor(idx, core::DenseTensor(std::move(v)), {100, 2});
}

const core::OperatorSpec kThreshold2{SparseSumOperator::kMeanOverContributors, 0.0, {}, 2};

TEST_CASE("mean_over_contributors_with_min_contributors_matches_the_thresholded_dense_reference") {
  // Sparse, dense and automatic representations against the dense reference with the threshold
  // (random scenarios of 1 to 24 clients and one of 150: many keys fall below k, some above).
  test::check_operator_properties(kThreshold2, 307);
  test::check_operator_properties({SparseSumOperator::kMeanOverContributors, 0.0, {}, 4}, 308);
  test::check_operator_properties(
      {SparseSumOperator::kMeanOverContributors, 0.0, {ClipKind::kRms, 0.5}, 3}, 309);
}

TEST_CASE("mean_over_contributors_withholds_rows_fewer_than_k_reports_sent_and_counts_them") {
  for (auto policy : {RepresentationPolicy::kSparse, RepresentationPolicy::kDense}) {
    core::SparseSumAccumulator acc("emb/weight", kThreshold2, UpdateEncoding::kRowSparse,
                                   DType::F32, {100, 2}, {policy});
    acc.add(rows({7, 50}, 0.5f), 1.0);
    // The same client's duplicate row counts once: row 9 has one report.
    acc.add(core::RowSparseTensor(
                core::RowIndices{7, 9, 9},
                core::DenseTensor(xt::xarray<float>{{0.25f, 0.25f}, {0.1f, 0.1f}, {0.1f, 0.1f}}),
                {100, 2}),
            3.0);
    CHECK(acc.num_touched() == 3);
    CHECK(acc.num_withheld() == 2);  // rows 9 and 50
    const auto result = std::get<core::RowSparseTensor>(acc.finalize());
    CHECK(result.indices() == core::RowIndices{7});
    // Row 7's value does not depend on the threshold: (1·0.5 + 3·0.25) / 4.
    CHECK(result.values() == core::DenseTensor(xt::xarray<float>{{0.3125f, 0.3125f}}));
  }
}

TEST_CASE("mean_over_contributors_min_contributors_one_is_off_and_other_operators_reject_it") {
  core::SparseSumAccumulator one("t", {SparseSumOperator::kMeanOverContributors, 0.0, {}, 1},
                                 UpdateEncoding::kRowSparse, DType::F32, {100, 2});
  CHECK(one.spec().min_contributors == 0);
  one.add(rows({3}, 1.f), 1.0);
  CHECK(one.num_withheld() == 0);
  CHECK(std::get<core::RowSparseTensor>(one.finalize()).num_rows() == 1);
  CHECK_THROWS_MATCHES(
      core::SparseSumAccumulator("t", {SparseSumOperator::kWeightedMean, 0.0, {}, 2},
                                 UpdateEncoding::kCoo, DType::F32, {10}),
      InvalidInput,
      MessageContains(
          "min_contributors applies to mean_over_contributors only, not weighted_mean"));
}

TEST_CASE("mean_over_contributors_dense_update_is_withheld_whole_below_k_reports") {
  core::SparseSumAccumulator acc("d", {SparseSumOperator::kMeanOverContributors, 0.0, {}, 3},
                                 UpdateEncoding::kDense, DType::F64, {2});
  acc.add(core::DenseTensor(xt::xarray<double>{1.0, 2.0}), 1.0);
  acc.add(core::DenseTensor(xt::xarray<double>{3.0, 4.0}), 1.0);
  CHECK(acc.num_withheld() == 2);
  CHECK(acc.finalize() == core::Tensor(core::DenseTensor(xt::xarray<double>{0.0, 0.0})));
  acc.add(core::DenseTensor(xt::xarray<double>{5.0, 6.0}), 1.0);
  CHECK(acc.num_withheld() == 0);
  CHECK(acc.finalize() == core::Tensor(core::DenseTensor(xt::xarray<double>{3.0, 4.0})));
}

TEST_CASE("mean_over_contributors_report_counts_add_up_across_merge_and_checkpoint") {
  for (auto policy : {RepresentationPolicy::kSparse, RepresentationPolicy::kDense}) {
    // Row 7 gets one report in each half: withheld in either, kept once merged.
    core::SparseSumAccumulator a("t", kThreshold2, UpdateEncoding::kRowSparse, DType::F32, {100, 2},
                                 {policy});
    core::SparseSumAccumulator b("t", kThreshold2, UpdateEncoding::kRowSparse, DType::F32,
                                 {100, 2});
    a.add(rows({7}, 1.f), 1.0);
    b.add(rows({7, 8}, 3.f), 1.0);
    CHECK(a.num_withheld() == 1);
    const auto bytes = b.to_safetensors();
    const core::SparseSumAccumulator loaded =
        core::SparseSumAccumulator::from_safetensors(bytes.data(), bytes.size(), {policy});
    CHECK(loaded.spec() == kThreshold2);
    CHECK(loaded.num_withheld() == 2);
    a.merge(loaded);
    CHECK(a.num_withheld() == 1);  // row 8
    const auto merged = std::get<core::RowSparseTensor>(a.finalize());
    CHECK(merged.indices() == core::RowIndices{7});
    CHECK(merged.values() == core::DenseTensor(xt::xarray<float>{{2.f, 2.f}}));
    const auto again = a.to_safetensors();
    CHECK(core::SparseSumAccumulator::from_safetensors(again.data(), again.size()).finalize() ==
          a.finalize());
  }
}

TEST_CASE("mean_over_contributors_checkpoint_rejects_impossible_report_counts") {
  core::SparseSumAccumulator acc("t", kThreshold2, UpdateEncoding::kRowSparse, DType::F32,
                                 {100, 2});
  acc.add(rows({7}, 1.f), 1.0);
  acc.add(rows({7}, 1.f), 1.0);
  auto file = core::read_safetensors(acc.to_safetensors());
  const auto with_reports = [&](double r) {
    auto f = file;
    f.tensors.insert_or_assign("t@reports", core::DenseTensor(xt::xarray<double>{r}));
    return core::write_safetensors(f.tensors, f.metadata);
  };
  for (double bad : {0.0, 1.5, 3.0}) {
    const auto bytes = with_reports(bad);
    CHECK_THROWS_MATCHES(core::SparseSumAccumulator::from_safetensors(bytes.data(), bytes.size()),
                         InvalidInput, MessageContains("is impossible for 2 updates"));
  }
  auto missing = file;
  missing.tensors.erase("t@reports");
  const auto no_reports = core::write_safetensors(missing.tensors, missing.metadata);
  CHECK_THROWS_MATCHES(
      core::SparseSumAccumulator::from_safetensors(no_reports.data(), no_reports.size()),
      InvalidInput, MessageContains("tensor 't@reports' is missing"));
  auto one = file;
  one.metadata["t@min_contributors"] = "1";
  const auto stored_one = core::write_safetensors(one.tensors, one.metadata);
  CHECK_THROWS_MATCHES(
      core::SparseSumAccumulator::from_safetensors(stored_one.data(), stored_one.size()),
      InvalidInput, MessageContains("min_contributors 1 is stored only when it is 2 or more"));
}

}  // namespace
}  // namespace fedleaf
