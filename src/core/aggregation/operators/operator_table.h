// The operator table: every operator of the sparse-sum family named once, with its rules (one
// file per operator beside this one). Code outside operators/ never names an operator: it asks
// the rules (operator_rules(op).takes_robust_clip(), .clips_to_norm, ...), and messages list
// operators from this table. A new operator is one file under operators/ and one line here.
//
//   const SparseSumOperator op = parse_operator_name("count", "plan.updates['w'].aggregator");
//   operator_rules(op).takes_robust_clip() == false;  operator_name(op) == "count";
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "core/aggregation/operators/clipped_weighted_mean.h"
#include "core/aggregation/operators/count.h"
#include "core/aggregation/operators/mean_over_contributors.h"
#include "core/aggregation/operators/operator_rules.h"
#include "core/aggregation/operators/sum.h"
#include "core/aggregation/operators/weighted_mean.h"

namespace fedleaf::core {

enum class SparseSumOperator {
  kSum,
  kWeightedMean,
  kMeanOverContributors,
  kCount,
  kClippedWeightedMean,
};

// Every operator, in the order messages list them.
inline constexpr SparseSumOperator kSparseSumOperators[] = {
    SparseSumOperator::kSum, SparseSumOperator::kWeightedMean,
    SparseSumOperator::kMeanOverContributors, SparseSumOperator::kCount,
    SparseSumOperator::kClippedWeightedMean};

// The table: the one switch over operators.
constexpr const OperatorRules& operator_rules(SparseSumOperator op) {
  switch (op) {
    case SparseSumOperator::kSum:
      return kSumRules;
    case SparseSumOperator::kWeightedMean:
      return kWeightedMeanRules;
    case SparseSumOperator::kMeanOverContributors:
      return kMeanOverContributorsRules;
    case SparseSumOperator::kCount:
      return kCountRules;
    case SparseSumOperator::kClippedWeightedMean:
      break;
  }
  return kClippedWeightedMeanRules;
}

constexpr std::string_view operator_name(SparseSumOperator op) { return operator_rules(op).name; }

// Throws InvalidInput "<context>: unknown aggregator '<name>' (expected sum, ..., or ...)".
SparseSumOperator parse_operator_name(std::string_view name, const std::string& context);

// The names of the operators whose rules satisfy `which`, in table order, as a message lists
// them: "a", "a or b", "a, b or c".
std::string operator_names(const std::function<bool(const OperatorRules&)>& which);

// Whether the operator needs, per index, the summed weight of the clients that sent it.
constexpr bool tracks_contributors(SparseSumOperator op) {
  return operator_rules(op).tracks_contributors();
}
// Whether the operator keeps per-index value sums (every operator but count).
constexpr bool tracks_values(SparseSumOperator op) { return operator_rules(op).tracks_values(); }
// Whether a client's update must be coalesced before folding (OperatorRules).
constexpr bool needs_coalesced_input(SparseSumOperator op) {
  return operator_rules(op).needs_coalesced_input();
}

}  // namespace fedleaf::core
