// count: #{c : i ∈ S_c}, the number of clients that sent each key (I64 values; for row_sparse
// every element of a row holds the row's count). Keeps no value sums; a client's duplicates of
// one key count once. For a dense update it is the number of updates everywhere.
//
//   kCountRules.scale(n_c, norm, clip_norm).contributors == 1.0;
#pragma once

#include "core/aggregation/operators/operator_rules.h"

namespace fedleaf::core {

inline constexpr OperatorRules kCountRules{"count",
                                           Weighting::kNone,
                                           Weighting::kOne,
                                           /*clips_to_norm=*/false,
                                           FinalizeRule::kUpdates,
                                           FinalizeRule::kContributors,
                                           /*takes_min_contributors=*/false};

}  // namespace fedleaf::core
