// What every operator file under operators/ states, in the shared vocabulary of the fold engine
// (SparseSumAccumulator): how one update is scaled when folded, how a stored key becomes its
// result, and which contributor values a checkpoint may hold.
//
//   const UpdateScale s = WeightedMean::scale(/*weight=*/n_c, /*norm=*/0.0, /*clip_norm=*/0.0);
//   sums[key] += s.values * u_c[key];  contributors[key] += s.contributors;
#pragma once

#include <cstdint>

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

}  // namespace fedleaf::core
