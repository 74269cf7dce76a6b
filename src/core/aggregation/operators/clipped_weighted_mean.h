// clipped_weighted_mean(r): weighted_mean of s_c u_c with s_c = min(1, r / ‖u_c‖₂), so no
// client moves the aggregate by more than n_c r / Σ n_c. The norm is the L2 norm of the client's
// whole update after its duplicates are summed (the tensor it means), computed in f64 without
// overflow.
//
//   ClippedWeightedMean::scale(n_c, /*norm=*/4.0, /*clip_norm=*/1.0).values == n_c / 4;
#pragma once

#include <cstdint>
#include <string_view>

#include "core/aggregation/operators/update_scale.h"
#include "core/aggregation/update_encoding.h"

namespace fedleaf::core {

struct ClippedWeightedMean {
  static constexpr std::string_view kName = "clipped_weighted_mean";
  static constexpr bool kTracksValues = true;
  static constexpr bool kTracksContributors = false;
  static constexpr bool kNeedsCoalescedInput = true;  // the norm is the summed tensor's
  static constexpr bool kNeedsNorm = true;

  static constexpr UpdateScale scale(double weight, double norm, double clip_norm) {
    return {norm > clip_norm ? weight * (clip_norm / norm) : weight, 0.0};
  }
  static constexpr FinalizeRule finalize_rule(UpdateEncoding /*encoding*/) {
    return FinalizeRule::kSumsOverTotal;
  }
  static constexpr bool valid_contributor(double /*weight*/, std::uint64_t /*num_updates*/) {
    return false;  // tracks no contributors
  }
};

}  // namespace fedleaf::core
