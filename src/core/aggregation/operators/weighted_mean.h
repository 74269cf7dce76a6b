// weighted_mean: Σ_c n_c u_c[i] / Σ_c n_c over all clients, so a key a client did not send
// counts as zero from that client (FedAvg of deltas).
//
//   kWeightedMeanRules.scale(n_c, norm, clip_norm).values == n_c;
#pragma once

#include "core/aggregation/operators/operator_rules.h"

namespace fedleaf::core {

inline constexpr OperatorRules kWeightedMeanRules{"weighted_mean",
                                                  Weighting::kWeight,
                                                  Weighting::kNone,
                                                  /*clips_to_norm=*/false,
                                                  FinalizeRule::kSumsOverTotal,
                                                  FinalizeRule::kSumsOverTotal,
                                                  /*takes_min_contributors=*/false};

}  // namespace fedleaf::core
