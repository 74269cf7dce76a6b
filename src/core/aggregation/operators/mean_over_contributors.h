// mean_over_contributors: Σ_{c: i∈S_c} n_c u_c[i] / Σ_{c: i∈S_c} n_c — a key moves by the
// weighted mean of the clients that sent it (rare embedding rows are not diluted by the clients
// that never saw them). Tracks, per key, the summed weight of its contributors; a client's
// duplicates of one key are summed first so it contributes once. For a dense update every key
// is sent by every client, so the result is weighted_mean's.
//
// min_contributors k (OperatorSpec; plans default to 2, update_plan.h): a key is in the result
// only when at least k distinct reports sent it (#{c : i ∈ S_c} ≥ k, a client's duplicates
// counting once); below that its row does not change this round and is counted as withheld
// (SparseSumAccumulator::num_withheld). It protects rare rows from being set by one leaf and
// keeps a single leaf's row from being published on its own, a first privacy step (not
// differential privacy). The accumulator keeps a per-key report count for it (f64, exact below
// 2^53) in every representation, merge and checkpoint. For a dense update every key is sent by
// every report, so the whole tensor is withheld while the round has fewer than k reports.
//
//   kMeanOverContributorsRules.scale(n_c, norm, clip_norm).contributors == n_c;
#pragma once

#include "core/aggregation/operators/operator_rules.h"

namespace fedleaf::core {

inline constexpr OperatorRules kMeanOverContributorsRules{"mean_over_contributors",
                                                          Weighting::kWeight,
                                                          Weighting::kWeight,
                                                          /*clips_to_norm=*/false,
                                                          FinalizeRule::kSumsOverTotal,
                                                          FinalizeRule::kSumsOverContributors,
                                                          /*takes_min_contributors=*/true};

}  // namespace fedleaf::core
