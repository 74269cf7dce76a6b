// The plan a round runs under, from the plan and the round before: the robust settings that move
// between rounds (adaptive clip bounds, adaptive example cap). The rules themselves are in
// adaptive_clip.h and adaptive_example_cap.h, which know nothing of plans or rounds; this file
// applies them to an UpdatePlan and a round's RoundStats.
//
//   ClipBounds first = initial_clip_bounds(plan);                 // a population's first round
//   ClipBounds next = next_clip_bounds(plan, round.stats());      // when a round closes
//   UpdatePlan round_plan = with_clip_bounds(plan, next);
//   if (auto cap = next_example_cap(plan, round.stats())) round_plan = with_example_cap(round_plan,
//   *cap);
#pragma once

#include <cstdint>
#include <optional>

#include "core/aggregation/robust/adaptive_clip.h"
#include "core/aggregation/round/round_aggregator.h"
#include "core/aggregation/updates/update_plan.h"

namespace fedleaf::core {

// The bounds of the plan's adaptive clips as the plan states them (a population's first round).
ClipBounds initial_clip_bounds(const UpdatePlan& plan);

// The bounds of the round after the one `stats` describes: next_clip_bound of each adaptive
// clip's bound that round (stats.clip_bound_per_tensor) and its clipped count. `plan` is the
// plan's parsed updates (it says which clips are adaptive, and their rules).
ClipBounds next_clip_bounds(const UpdatePlan& plan, const RoundStats& stats);

// The plan with each adaptive clip's bound replaced by the round's bound from `bounds`; a tensor
// `bounds` does not name keeps its current bound (its initial one for a parsed plan). Entries for
// tensors without an adaptive clip are ignored: a fixed clip's bound is the plan's. Throws
// InvalidInput naming the tensor for a bound that is not finite and > 0.
UpdatePlan with_clip_bounds(UpdatePlan plan, const ClipBounds& bounds);

// The cap of the round after the one `stats` describes, when the plan's cap is adaptive
// (nullopt otherwise): next_example_cap of the round's cap and median claim.
std::optional<std::uint64_t> next_example_cap(const UpdatePlan& plan, const RoundStats& stats);

// The plan with max_examples_per_report replaced by a round's adaptive cap. A plan whose cap is
// fixed or off is returned unchanged. Throws InvalidInput naming the field for a cap outside
// [1, 2^53].
UpdatePlan with_example_cap(UpdatePlan plan, std::uint64_t cap);

}  // namespace fedleaf::core
