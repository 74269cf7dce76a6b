#include "core/aggregation/sparse_sum_operator.h"

#include <cmath>

#include "core/error.h"

namespace fedleaf::core {

std::string_view operator_name(SparseSumOperator op) { return operator_rules(op).name; }

OperatorSpec parse_operator_spec(std::string_view name, std::optional<double> clip_norm,
                                 const std::string& context) {
  for (SparseSumOperator op : {SparseSumOperator::kSum, SparseSumOperator::kWeightedMean,
                               SparseSumOperator::kMeanOverContributors, SparseSumOperator::kCount,
                               SparseSumOperator::kClippedWeightedMean}) {
    if (name != operator_name(op)) continue;
    if (op != SparseSumOperator::kClippedWeightedMean) return {op, 0.0};
    if (!clip_norm || !std::isfinite(*clip_norm) || *clip_norm <= 0.0) {
      throw InvalidInput(context + ": clipped_weighted_mean needs a finite clip_norm > 0");
    }
    return {op, *clip_norm};
  }
  throw InvalidInput(context + ": unknown aggregator '" + std::string(name) +
                     "' (expected sum, weighted_mean, mean_over_contributors, count or "
                     "clipped_weighted_mean)");
}

}  // namespace fedleaf::core
