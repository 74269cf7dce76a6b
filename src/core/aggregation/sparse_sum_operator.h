// The sparse-sum family: the named operators a plan chooses per tensor (docs/design.md, "The
// sparse-sum family"). With clients c, weights n_c (num_examples), values u_c[i] and S_c the
// indices client c sent (after coalescing its duplicates):
//
//   sum                         Σ_c u_c[i]                                  (untouched: absent)
//   weighted_mean               Σ_c n_c u_c[i] / Σ_c n_c                    (absent = zero)
//   mean_over_contributors      Σ_{c: i∈S_c} n_c u_c[i] / Σ_{c: i∈S_c} n_c
//   count                       #{c : i ∈ S_c}                              (I64 values)
//   clipped_weighted_mean(r)    weighted_mean of s_c u_c, s_c = min(1, r / ‖u_c‖₂)
//
//   OperatorSpec spec = parse_operator_spec("clipped_weighted_mean", 1.0, "plan.updates['w']");
//   operator_name(spec.op) == "clipped_weighted_mean";
//
// For a dense update every index is in S_c, so mean_over_contributors equals weighted_mean and
// count is the number of updates everywhere.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fedleaf::core {

enum class SparseSumOperator {
  kSum,
  kWeightedMean,
  kMeanOverContributors,
  kCount,
  kClippedWeightedMean,
};

struct OperatorSpec {
  SparseSumOperator op = SparseSumOperator::kWeightedMean;
  double clip_norm = 0.0;  // L2 bound of clipped_weighted_mean (> 0); 0 for the others

  friend bool operator==(const OperatorSpec& a, const OperatorSpec& b) {
    return a.op == b.op && a.clip_norm == b.clip_norm;
  }
  friend bool operator!=(const OperatorSpec& a, const OperatorSpec& b) { return !(a == b); }
};

std::string_view operator_name(SparseSumOperator op);
// Throws InvalidInput naming `context` for an unknown name, or for clipped_weighted_mean
// without a finite clip_norm > 0. clip_norm is ignored by the other operators.
OperatorSpec parse_operator_spec(std::string_view name, std::optional<double> clip_norm,
                                 const std::string& context);

// Whether the operator needs, per index, the summed weight of the clients that sent it.
constexpr bool tracks_contributors(SparseSumOperator op) {
  return op == SparseSumOperator::kMeanOverContributors || op == SparseSumOperator::kCount;
}
// Whether the operator keeps per-index value sums (every operator but count).
constexpr bool tracks_values(SparseSumOperator op) { return op != SparseSumOperator::kCount; }
// Whether a client's update must be coalesced before folding: duplicates of one index count
// once for contributor weights, and a clipping norm is the norm of the summed tensor. For the
// other operators the fold is linear, so duplicates may be folded one by one.
constexpr bool needs_coalesced_input(SparseSumOperator op) {
  return tracks_contributors(op) || op == SparseSumOperator::kClippedWeightedMean;
}

}  // namespace fedleaf::core
