#include <catch2/catch.hpp>

#include "core/aggregation/operators/sparse_sum_operator.h"
#include "core/aggregation/operators/update_encoding.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

using core::SparseSumOperator;
using test::MessageContains;

TEST_CASE("parse_operator_spec_accepts_every_family_name_and_round_trips_it") {
  for (auto op : {SparseSumOperator::kSum, SparseSumOperator::kWeightedMean,
                  SparseSumOperator::kMeanOverContributors, SparseSumOperator::kCount,
                  SparseSumOperator::kClippedWeightedMean}) {
    const core::OperatorSpec spec =
        core::parse_operator_spec(core::operator_name(op), 2.5, "updates 'w'");
    CHECK(spec.op == op);
    CHECK(spec.clip_norm == (op == SparseSumOperator::kClippedWeightedMean ? 2.5 : 0.0));
  }
}

TEST_CASE("parse_operator_spec_rejects_unknown_names_and_clipping_without_a_positive_norm") {
  CHECK_THROWS_MATCHES(core::parse_operator_spec("median", std::nullopt, "updates 'w'"),
                       InvalidInput, MessageContains("updates 'w': unknown aggregator 'median'"));
  CHECK_THROWS_MATCHES(
      core::parse_operator_spec("clipped_weighted_mean", std::nullopt, "updates 'w'"), InvalidInput,
      MessageContains("needs a finite clip_norm > 0"));
  CHECK_THROWS_MATCHES(core::parse_operator_spec("clipped_weighted_mean", 0.0, "updates 'w'"),
                       InvalidInput, MessageContains("clip_norm > 0"));
  CHECK_THROWS_MATCHES(core::parse_operator_spec("clipped_weighted_mean", INFINITY, "u"),
                       InvalidInput, MessageContains("clip_norm > 0"));
}

TEST_CASE("operator_properties_say_which_state_each_operator_keeps") {
  CHECK(core::tracks_contributors(SparseSumOperator::kMeanOverContributors));
  CHECK(core::tracks_contributors(SparseSumOperator::kCount));
  CHECK_FALSE(core::tracks_contributors(SparseSumOperator::kWeightedMean));
  CHECK_FALSE(core::tracks_values(SparseSumOperator::kCount));
  CHECK(core::needs_coalesced_input(SparseSumOperator::kClippedWeightedMean));
  CHECK_FALSE(core::needs_coalesced_input(SparseSumOperator::kSum));
}

TEST_CASE("update_encoding_parses_names_and_classifies_tensors") {
  CHECK(core::parse_update_encoding("coo", "x") == core::UpdateEncoding::kCoo);
  CHECK(core::parse_update_encoding("row_sparse", "x") == core::UpdateEncoding::kRowSparse);
  CHECK(core::update_encoding_name(core::parse_update_encoding("dense", "x")) == "dense");
  CHECK_THROWS_MATCHES(core::parse_update_encoding("csr", "updates 'w'"), InvalidInput,
                       MessageContains("updates 'w': unknown encoding 'csr'"));
  const core::Tensor rows = core::RowSparseTensor(
      core::RowIndices{0},
      core::DenseTensor(xt::xarray<float>(std::vector<std::size_t>{1, 1}, 1.f)), {2, 1});
  CHECK(core::update_encoding_of(rows) == core::UpdateEncoding::kRowSparse);
  CHECK(core::update_encoding_of(core::DenseTensor()) == core::UpdateEncoding::kDense);
}

TEST_CASE("check_operator_spec_applies_each_rule_of_the_operator_table") {
  using core::ClipKind;
  using core::OperatorSpec;
  using core::UpdateEncoding;
  const auto check = [](OperatorSpec spec, UpdateEncoding e = UpdateEncoding::kRowSparse) {
    return core::check_operator_spec(spec, e, "accumulator 'w'");
  };
  OperatorSpec mean{SparseSumOperator::kMeanOverContributors, 7.0, {ClipKind::kRms, 0.5}, 1, 10.0};
  const OperatorSpec checked = check(mean);
  CHECK(checked.clip_norm == 0.0);       // only an operator that clips to a norm keeps one
  CHECK(checked.min_contributors == 0);  // 1 report always suffices: off
  CHECK(checked.clip.bound == 0.5);
  CHECK(check({SparseSumOperator::kSum, 0.0, {ClipKind::kOff, 3.0}}).clip.bound == 0.0);
  CHECK_THROWS_MATCHES(check({SparseSumOperator::kClippedWeightedMean, 0.0}), InvalidInput,
                       MessageContains("accumulator 'w': clipped_weighted_mean needs a finite "
                                       "clip_norm > 0"));
  CHECK_THROWS_MATCHES(check({SparseSumOperator::kCount, 0.0, {ClipKind::kRms, 1.0}}), InvalidInput,
                       MessageContains("count takes no robust clip (count has no values; "
                                       "clipped_weighted_mean clips by its clip_norm)"));
  CHECK_THROWS_MATCHES(check({SparseSumOperator::kSum, 0.0, {ClipKind::kNorm, -1.0}}), InvalidInput,
                       MessageContains("the clip bound -1 must be finite and > 0"));
  CHECK_THROWS_MATCHES(
      check({SparseSumOperator::kSum, 0.0, {ClipKind::kRms, 1.0}, 0, 4.0}, UpdateEncoding::kDense),
      InvalidInput, MessageContains("a row clip (4) needs a row_sparse tensor"));
  CHECK_THROWS_MATCHES(check({SparseSumOperator::kWeightedMean, 0.0, {}, 2}), InvalidInput,
                       MessageContains("min_contributors applies to mean_over_contributors only, "
                                       "not weighted_mean"));
}

TEST_CASE("clip_norm_rule_words_the_rule_for_the_operator") {
  CHECK(core::clip_norm_rule(SparseSumOperator::kClippedWeightedMean) ==
        "clipped_weighted_mean needs a finite clip_norm > 0");
}

}  // namespace
}  // namespace fedleaf
