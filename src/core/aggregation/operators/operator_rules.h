// What every operator file under operators/ states, as one OperatorRules value in the shared
// vocabulary of the fold engine (SparseSumAccumulator): how one update is scaled when folded, how
// a stored key becomes its result; what it tracks and which contributor values a checkpoint may
// hold follow from those.
//
// The operators are listed, each with its rules, in operator_table.h.
//
//   const UpdateScale s = kWeightedMeanRules.scale(/*weight=*/n_c, /*norm=*/0.0,
//   /*clip_norm=*/0.0); sums[key] += s.values * u_c[key];  contributors[key] += s.contributors;
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

#include "core/aggregation/operators/update_encoding.h"

namespace fedleaf::core {

// Multipliers of one update's fold: every value is multiplied by `values` before it is added
// to its key's sum, and `contributors` is added to the contributor weight of each key it sent.
struct UpdateScale {
  double values = 1.0;
  double contributors = 0.0;
};

// How finalize() turns a touched key's state into its result. With no updates every sum is
// zero and the divisor of kSumsOverTotal is 1.
enum class FinalizeRule {
  kSums,                  // Σ (scaled values)
  kSumsOverTotal,         // Σ (scaled values) / Σ_c n_c
  kSumsOverContributors,  // Σ (scaled values) / the key's contributor weight
  kContributors,          // the key's contributor weight (an integer for count)
  kUpdates,               // the number of updates (every key of a dense update is touched)
};

// What one client's update adds per key it sent, to its value sums or its contributor weight.
enum class Weighting {
  kNone,    // nothing: that state is not tracked
  kOne,     // 1 (unweighted sums; a count of clients)
  kWeight,  // the client's weight n_c
};

struct OperatorRules {
  std::string_view name;
  Weighting values;        // multiplier of the update's values
  Weighting contributors;  // added to the contributor weight of each key the update sent
  bool clips_to_norm;  // values also scaled by min(1, clip_norm / ‖u_c‖₂); needs clip_norm
  FinalizeRule dense_rule;
  FinalizeRule sparse_rule;     // coo and row_sparse
  bool takes_min_contributors;  // a key is published only once enough reports sent it

  constexpr bool tracks_values() const { return values != Weighting::kNone; }
  constexpr bool tracks_contributors() const { return contributors != Weighting::kNone; }
  // A client counts once per key, and a clipping norm is that of the summed tensor; any other
  // fold is linear, so duplicates of one key may be folded one by one.
  constexpr bool needs_coalesced_input() const { return tracks_contributors() || clips_to_norm; }
  // The plan's robust clip scales values; an operator that clips by its own clip_norm, or has
  // no values, takes none.
  constexpr bool takes_robust_clip() const { return tracks_values() && !clips_to_norm; }

  constexpr UpdateScale scale(double weight, double norm, double clip_norm) const {
    const double value_weight = weigh(values, weight);
    return {clips_to_norm && norm > clip_norm ? value_weight * (clip_norm / norm) : value_weight,
            weigh(contributors, weight)};
  }
  constexpr FinalizeRule finalize_rule(UpdateEncoding encoding) const {
    return encoding == UpdateEncoding::kDense ? dense_rule : sparse_rule;
  }
  // Whether the result counts (I64 values) rather than averages in the tensor's dtype.
  constexpr bool finalizes_to_counts(UpdateEncoding encoding) const {
    const FinalizeRule rule = finalize_rule(encoding);
    return rule == FinalizeRule::kUpdates || rule == FinalizeRule::kContributors;
  }
  // Whether a checkpoint may hold contributor weight c after num_updates updates: a weight sum
  // is > 0 (its key was sent by a client of weight > 0), a count a whole number of clients in
  // [1, num_updates]; an operator without contributors accepts none.
  bool valid_contributor(double c, std::uint64_t num_updates) const {
    switch (contributors) {
      case Weighting::kWeight:
        return c > 0.0;
      case Weighting::kOne:
        return c >= 1.0 && c == std::floor(c) && c <= static_cast<double>(num_updates);
      case Weighting::kNone:
        break;
    }
    return false;
  }

 private:
  static constexpr double weigh(Weighting w, double weight) {
    return w == Weighting::kWeight ? weight : w == Weighting::kOne ? 1.0 : 0.0;
  }
};

}  // namespace fedleaf::core
