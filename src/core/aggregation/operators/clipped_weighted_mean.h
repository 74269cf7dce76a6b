// clipped_weighted_mean(r): weighted_mean of s_c u_c with s_c = min(1, r / ‖u_c‖₂), so no
// client moves the aggregate by more than n_c r / Σ n_c. The norm is the L2 norm of the client's
// whole update after its duplicates are summed (the tensor it means), computed in f64 without
// overflow.
//
//   kClippedWeightedMeanRules.scale(n_c, /*norm=*/4.0, /*clip_norm=*/1.0).values == n_c / 4;
#pragma once

#include "core/aggregation/operators/operator_rules.h"

namespace fedleaf::core {

inline constexpr OperatorRules kClippedWeightedMeanRules{
    "clipped_weighted_mean",         Weighting::kWeight,           Weighting::kNone,
    /*clips_to_norm=*/true,          FinalizeRule::kSumsOverTotal, FinalizeRule::kSumsOverTotal,
    /*takes_min_contributors=*/false};

}  // namespace fedleaf::core
