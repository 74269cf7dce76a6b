// sum: Σ_c u_c[i]. Unweighted; a key nobody sent is absent from a sparse result.
//
//   kSumRules.scale(n_c, norm, clip_norm).values == 1.0;
#pragma once

#include "core/aggregation/operators/operator_rules.h"

namespace fedleaf::core {

inline constexpr OperatorRules kSumRules{"sum",
                                         Weighting::kOne,
                                         Weighting::kNone,
                                         /*clips_to_norm=*/false,
                                         FinalizeRule::kSums,
                                         FinalizeRule::kSums,
                                         /*takes_min_contributors=*/false};

}  // namespace fedleaf::core
