#include <catch2/catch.hpp>

#include "core/aggregation/operators/sparse_sum_operator.h"
#include "core/error.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

using core::FinalizeRule;
using core::SparseSumOperator;
using core::UpdateEncoding;

TEST_CASE("operator_rules_scale_each_update_by_the_operators_weighting") {
  // weight 3, update norm 4, clip_norm 2 (ignored by every operator but clipped_weighted_mean)
  const auto scale = [](SparseSumOperator op) {
    return core::operator_rules(op).scale(3.0, 4.0, 2.0);
  };
  CHECK(scale(SparseSumOperator::kSum).values == 1.0);
  CHECK(scale(SparseSumOperator::kSum).contributors == 0.0);
  CHECK(scale(SparseSumOperator::kWeightedMean).values == 3.0);
  CHECK(scale(SparseSumOperator::kWeightedMean).contributors == 0.0);
  CHECK(scale(SparseSumOperator::kMeanOverContributors).values == 3.0);
  CHECK(scale(SparseSumOperator::kMeanOverContributors).contributors == 3.0);
  CHECK(scale(SparseSumOperator::kCount).values == 0.0);
  CHECK(scale(SparseSumOperator::kCount).contributors == 1.0);
  CHECK(scale(SparseSumOperator::kClippedWeightedMean).values == 1.5);        // 3 · 2/4
  CHECK(core::kClippedWeightedMeanRules.scale(3.0, 1.0, 2.0).values == 3.0);  // within the bound
}

TEST_CASE("operator_rules_name_the_finalize_rule_per_encoding") {
  const auto rule = [](SparseSumOperator op, UpdateEncoding e) {
    return core::operator_rules(op).finalize_rule(e);
  };
  for (UpdateEncoding e :
       {UpdateEncoding::kDense, UpdateEncoding::kCoo, UpdateEncoding::kRowSparse}) {
    CHECK(rule(SparseSumOperator::kSum, e) == FinalizeRule::kSums);
    CHECK(rule(SparseSumOperator::kWeightedMean, e) == FinalizeRule::kSumsOverTotal);
    CHECK(rule(SparseSumOperator::kClippedWeightedMean, e) == FinalizeRule::kSumsOverTotal);
  }
  CHECK(rule(SparseSumOperator::kMeanOverContributors, UpdateEncoding::kDense) ==
        FinalizeRule::kSumsOverTotal);
  CHECK(rule(SparseSumOperator::kMeanOverContributors, UpdateEncoding::kRowSparse) ==
        FinalizeRule::kSumsOverContributors);
  CHECK(rule(SparseSumOperator::kCount, UpdateEncoding::kDense) == FinalizeRule::kUpdates);
  CHECK(rule(SparseSumOperator::kCount, UpdateEncoding::kCoo) == FinalizeRule::kContributors);
}

TEST_CASE("operator_rules_accept_only_possible_checkpointed_contributor_values") {
  CHECK(core::kMeanOverContributorsRules.valid_contributor(0.5, 1));
  CHECK_FALSE(core::kMeanOverContributorsRules.valid_contributor(0.0, 3));
  CHECK(core::kCountRules.valid_contributor(3.0, 3));
  CHECK_FALSE(core::kCountRules.valid_contributor(4.0, 3));
  CHECK_FALSE(core::kCountRules.valid_contributor(1.5, 3));
  CHECK_FALSE(core::kCountRules.valid_contributor(0.0, 3));
  // Operators without contributors accept none.
  CHECK_FALSE(core::kSumRules.valid_contributor(1.0, 3));
  CHECK_FALSE(core::kWeightedMeanRules.valid_contributor(1.0, 3));
  CHECK_FALSE(core::kClippedWeightedMeanRules.valid_contributor(1.0, 3));
}

TEST_CASE("operator_rules_state_what_each_operator_tracks") {
  CHECK(core::kSumRules.tracks_values());
  CHECK_FALSE(core::kSumRules.needs_coalesced_input());
  CHECK_FALSE(core::kWeightedMeanRules.tracks_contributors());
  CHECK(core::kMeanOverContributorsRules.tracks_contributors());
  CHECK_FALSE(core::kCountRules.tracks_values());
  CHECK(core::kClippedWeightedMeanRules.clips_to_norm);
  CHECK_FALSE(core::kWeightedMeanRules.clips_to_norm);
  CHECK(core::operator_name(SparseSumOperator::kMeanOverContributors) == "mean_over_contributors");
}

TEST_CASE("operator_rules_say_which_plan_settings_each_operator_takes") {
  CHECK(core::kSumRules.takes_robust_clip());
  CHECK(core::kWeightedMeanRules.takes_robust_clip());
  CHECK(core::kMeanOverContributorsRules.takes_robust_clip());
  CHECK_FALSE(core::kCountRules.takes_robust_clip());                // no values
  CHECK_FALSE(core::kClippedWeightedMeanRules.takes_robust_clip());  // clips by its clip_norm
  CHECK(core::kMeanOverContributorsRules.takes_min_contributors);
  CHECK_FALSE(core::kWeightedMeanRules.takes_min_contributors);
  CHECK_FALSE(core::kCountRules.takes_min_contributors);
  for (UpdateEncoding e :
       {UpdateEncoding::kDense, UpdateEncoding::kCoo, UpdateEncoding::kRowSparse}) {
    CHECK(core::kCountRules.finalizes_to_counts(e));
    CHECK_FALSE(core::kMeanOverContributorsRules.finalizes_to_counts(e));
    CHECK_FALSE(core::kSumRules.finalizes_to_counts(e));
  }
}

TEST_CASE("operator_table_names_every_operator_once_and_parses_its_names") {
  for (const SparseSumOperator op : core::kSparseSumOperators) {
    CHECK(core::parse_operator_name(core::operator_name(op), "x") == op);
  }
  CHECK(core::operator_names([](const core::OperatorRules&) { return true; }) ==
        "sum, weighted_mean, mean_over_contributors, count or clipped_weighted_mean");
  CHECK(core::operator_names([](const core::OperatorRules& r) { return !r.tracks_values(); }) ==
        "count");
  CHECK(core::operator_names([](const core::OperatorRules& r) { return r.takes_robust_clip(); }) ==
        "sum, weighted_mean or mean_over_contributors");
  CHECK(core::operator_names([](const core::OperatorRules&) { return false; }).empty());
  CHECK_THROWS_MATCHES(
      core::parse_operator_name("median", "plan.updates['w'].aggregator"), InvalidInput,
      test::MessageContains("plan.updates['w'].aggregator: unknown aggregator 'median' (expected "
                            "sum, weighted_mean, mean_over_contributors, count or "
                            "clipped_weighted_mean)"));
}

}  // namespace
}  // namespace fedleaf
