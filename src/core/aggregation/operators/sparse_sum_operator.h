// The sparse-sum family: the named operators a plan chooses per tensor (docs/design.md, "The
// sparse-sum family"). Each operator's rules live in its own file under operators/; the fold
// engine that applies them is SparseSumAccumulator. With clients c, weights n_c (num_examples),
// values u_c[i] and S_c the indices client c sent (after coalescing its duplicates):
//
//   sum                         Σ_c u_c[i]                                  (untouched: absent)
//   weighted_mean               Σ_c n_c u_c[i] / Σ_c n_c                    (absent = zero)
//   mean_over_contributors      Σ_{c: i∈S_c} n_c u_c[i] / Σ_{c: i∈S_c} n_c
//                               (absent unless #{c : i ∈ S_c} ≥ min_contributors)
//   count                       #{c : i ∈ S_c}                              (I64 values)
//   clipped_weighted_mean(r)    weighted_mean of s_c u_c, s_c = min(1, r / ‖u_c‖₂)
//
//   OperatorSpec spec = parse_operator_spec("clipped_weighted_mean", 1.0, "plan.updates['w']");
//   operator_name(spec.op) == "clipped_weighted_mean";
//   spec = check_operator_spec(spec, UpdateEncoding::kDense, "accumulator 'w'");
//
// For a dense update every index is in S_c, so mean_over_contributors equals weighted_mean and
// count is the number of updates everywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/aggregation/operators/operator_table.h"
#include "core/aggregation/operators/update_encoding.h"

namespace fedleaf::core {

// Robust clipping of each update before any operator with values folds it (sum, weighted_mean,
// mean_over_contributors): an update u_c whose L2 norm exceeds the bound B_c is scaled by
// B_c / ‖u_c‖₂ (its direction is kept). kNorm: B_c = bound. kRms: B_c = bound · sqrt(m_c), m_c
// the number of values the update sent (after summing duplicates), i.e. a bound on the root
// mean square of the values it sent, so one setting fits tensors of any size. `bound` is the
// bound of the round the accumulator folds: a plan's adaptive clip (adaptive_clip.h) changes it
// from round to round (with_clip_bounds), never within one. The norm is that
// of the update as the tensor it means (duplicates summed), in f64. Weights and contributor
// weights are not changed by clipping.
//
// Row clip (row_sparse tensors with a kRms clip, OperatorSpec::row_clip = k > 0): before the
// clip above, each row r of the update whose norm exceeds k · bound · sqrt(width) (a row rms
// above k times the round's rms bound) is scaled down to that norm. Why: the rms clip bounds the
// average size of the values a report sent, not where it puts them; a report may spend its whole
// budget on a few rows, each then moving by up to bound · sqrt(m_c) (a leaf scaling its update
// ×1e6 after its own data are fit: almost all its energy in a handful of rows). Honest rows
// stay far below k times the average of a report (the demo: k = 4 already cost clean accuracy,
// k from 6 to 100 did not, and all of them bound the scaled leaf; scripts/bench.sh poison).
enum class ClipKind { kOff, kNorm, kRms };
struct UpdateClip {
  ClipKind kind = ClipKind::kOff;
  double bound = 0.0;  // > 0 and finite unless kOff

  friend bool operator==(const UpdateClip& a, const UpdateClip& b) {
    return a.kind == b.kind && a.bound == b.bound;
  }
  friend bool operator!=(const UpdateClip& a, const UpdateClip& b) { return !(a == b); }
};

struct OperatorSpec {
  SparseSumOperator op = SparseSumOperator::kWeightedMean;
  double clip_norm = 0.0;  // L2 bound of clipped_weighted_mean (> 0); 0 for the others
  UpdateClip clip{};       // robust clipping; kOff for count and clipped_weighted_mean
  // mean_over_contributors only: a key changes only when at least this many reports sent it
  // (operators/mean_over_contributors.h); 0 (or 1, normalised to 0 by the accumulator): off.
  std::uint64_t min_contributors = 0;
  // row_sparse with a kRms clip only: each row's rms is clipped at row_clip × clip.bound before
  // the whole update is clipped (see "Row clip" above); 0: off.
  double row_clip = 0.0;

  friend bool operator==(const OperatorSpec& a, const OperatorSpec& b) {
    return a.op == b.op && a.clip_norm == b.clip_norm && a.clip == b.clip &&
           a.min_contributors == b.min_contributors && a.row_clip == b.row_clip;
  }
  friend bool operator!=(const OperatorSpec& a, const OperatorSpec& b) { return !(a == b); }
};

// Throws InvalidInput naming `context` for an unknown name, or for an operator that clips to a
// norm (clipped_weighted_mean) without a finite clip_norm > 0. clip_norm is dropped (0) for the
// others.
OperatorSpec parse_operator_spec(std::string_view name, std::optional<double> clip_norm,
                                 const std::string& context);

// The one check of an OperatorSpec against its operator's rules (operators/operator_table.h):
// clip_norm (clip_norm_rule), a robust clip only where the operator takes one and with a finite
// bound > 0, a row clip only on a row_sparse tensor with an rms clip, min_contributors only where
// the operator takes it. Returns the spec normalised (clip_norm 0 where the operator does not
// clip to a norm, an off clip's bound 0, min_contributors 1 as 0); throws InvalidInput "<where>:
// <rule>".
OperatorSpec check_operator_spec(OperatorSpec spec, UpdateEncoding encoding,
                                 const std::string& where);

// "<operator> needs a finite clip_norm > 0": the rule's one wording.
std::string clip_norm_rule(SparseSumOperator op);

}  // namespace fedleaf::core
