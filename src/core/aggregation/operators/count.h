// count: #{c : i ∈ S_c}, the number of clients that sent each key (I64 values; for row_sparse
// every element of a row holds the row's count). Keeps no value sums; a client's duplicates of
// one key count once. For a dense update it is the number of updates everywhere.
//
//   Count::scale(n_c, norm, clip_norm).contributors == 1.0;
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

#include "core/aggregation/operators/update_scale.h"
#include "core/aggregation/update_encoding.h"

namespace fedleaf::core {

struct Count {
  static constexpr std::string_view kName = "count";
  static constexpr bool kTracksValues = false;
  static constexpr bool kTracksContributors = true;
  static constexpr bool kNeedsCoalescedInput = true;  // a client counts once per key
  static constexpr bool kNeedsNorm = false;

  static constexpr UpdateScale scale(double /*weight*/, double /*norm*/, double /*clip_norm*/) {
    return {0.0, 1.0};
  }
  static constexpr FinalizeRule finalize_rule(UpdateEncoding encoding) {
    return encoding == UpdateEncoding::kDense ? FinalizeRule::kUpdates
                                              : FinalizeRule::kContributors;
  }
  // A stored count is a whole number of clients in [1, num_updates].
  static bool valid_contributor(double count, std::uint64_t num_updates) {
    return count >= 1.0 && count == std::floor(count) && count <= static_cast<double>(num_updates);
  }
};

}  // namespace fedleaf::core
