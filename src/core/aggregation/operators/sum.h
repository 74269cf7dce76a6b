// sum: Σ_c u_c[i]. Unweighted; a key nobody sent is absent from a sparse result.
//
//   Sum::scale(n_c, norm, clip_norm).values == 1.0;
#pragma once

#include <cstdint>
#include <string_view>

#include "core/aggregation/operators/update_scale.h"
#include "core/aggregation/update_encoding.h"

namespace fedleaf::core {

struct Sum {
  static constexpr std::string_view kName = "sum";
  static constexpr bool kTracksValues = true;
  static constexpr bool kTracksContributors = false;
  // Linear fold: duplicates of one key may be folded one by one.
  static constexpr bool kNeedsCoalescedInput = false;
  static constexpr bool kNeedsNorm = false;

  static constexpr UpdateScale scale(double /*weight*/, double /*norm*/, double /*clip_norm*/) {
    return {1.0, 0.0};
  }
  static constexpr FinalizeRule finalize_rule(UpdateEncoding /*encoding*/) {
    return FinalizeRule::kSums;
  }
  // Tracks no contributors, so a checkpoint holds none to check.
  static constexpr bool valid_contributor(double /*weight*/, std::uint64_t /*num_updates*/) {
    return false;
  }
};

}  // namespace fedleaf::core
