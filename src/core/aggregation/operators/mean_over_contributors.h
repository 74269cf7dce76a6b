// mean_over_contributors: Σ_{c: i∈S_c} n_c u_c[i] / Σ_{c: i∈S_c} n_c — a key moves by the
// weighted mean of the clients that sent it (rare embedding rows are not diluted by the clients
// that never saw them). Tracks, per key, the summed weight of its contributors; a client's
// duplicates of one key are summed first so it contributes once. For a dense update every key
// is sent by every client, so the result is weighted_mean's.
//
//   MeanOverContributors::scale(n_c, norm, clip_norm).contributors == n_c;
#pragma once

#include <cstdint>
#include <string_view>

#include "core/aggregation/operators/update_scale.h"
#include "core/aggregation/update_encoding.h"

namespace fedleaf::core {

struct MeanOverContributors {
  static constexpr std::string_view kName = "mean_over_contributors";
  static constexpr bool kTracksValues = true;
  static constexpr bool kTracksContributors = true;
  static constexpr bool kNeedsCoalescedInput = true;  // a client counts once per key
  static constexpr bool kNeedsNorm = false;

  static constexpr UpdateScale scale(double weight, double /*norm*/, double /*clip_norm*/) {
    return {weight, weight};
  }
  static constexpr FinalizeRule finalize_rule(UpdateEncoding encoding) {
    return encoding == UpdateEncoding::kDense ? FinalizeRule::kSumsOverTotal
                                              : FinalizeRule::kSumsOverContributors;
  }
  // A stored key was sent by at least one client of weight > 0.
  static constexpr bool valid_contributor(double weight, std::uint64_t /*num_updates*/) {
    return weight > 0.0;
  }
};

}  // namespace fedleaf::core
