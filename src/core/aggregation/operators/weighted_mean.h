// weighted_mean: Σ_c n_c u_c[i] / Σ_c n_c over all clients, so a key a client did not send
// counts as zero from that client (FedAvg of deltas).
//
//   WeightedMean::scale(n_c, norm, clip_norm).values == n_c;
#pragma once

#include <cstdint>
#include <string_view>

#include "core/aggregation/operators/update_scale.h"
#include "core/aggregation/update_encoding.h"

namespace fedleaf::core {

struct WeightedMean {
  static constexpr std::string_view kName = "weighted_mean";
  static constexpr bool kTracksValues = true;
  static constexpr bool kTracksContributors = false;
  static constexpr bool kNeedsCoalescedInput = false;  // linear fold
  static constexpr bool kNeedsNorm = false;

  static constexpr UpdateScale scale(double weight, double /*norm*/, double /*clip_norm*/) {
    return {weight, 0.0};
  }
  static constexpr FinalizeRule finalize_rule(UpdateEncoding /*encoding*/) {
    return FinalizeRule::kSumsOverTotal;
  }
  static constexpr bool valid_contributor(double /*weight*/, std::uint64_t /*num_updates*/) {
    return false;  // tracks no contributors
  }
};

}  // namespace fedleaf::core
