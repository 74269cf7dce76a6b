// The adaptive clip bounds a training round uses (core/aggregation/adaptive_clip.h), kept in the
// round's own row: its robust_json says {"clip_bound": {tensor: bound}} from the moment the round
// opens (the close of the round before writes it, with the next round's row), so a restart, a
// checkpoint restore and every server sharing the store build the round's aggregator with the
// same bounds. No schema change: robust_json is the round's column for robust aggregation.
//
//   core::UpdatePlan round_plan = core::with_clip_bounds(*st.update_plan,
//   round_clip_bounds(round)); opened.robust_json =
//   open_round_robust_json(core::next_clip_bounds(*st.update_plan, stats));
#pragma once

#include <string>

#include "core/aggregation/adaptive_clip.h"
#include "server/store/store.h"

namespace fedleaf::server {

// The bounds stored with `round` ({} for a round opened by a server that predates adaptive
// clipping, or a plan without one: its aggregator then uses the plan's initial bounds). Throws
// InvalidInput when robust_json is not a JSON object or "clip_bound" is not an object of numbers.
core::ClipBounds round_clip_bounds(const RoundRecord& round);

// robust_json of a round about to open with `bounds`: {"clip_bound": {...}}, or "{}" when there
// are none.
std::string open_round_robust_json(const core::ClipBounds& bounds);

}  // namespace fedleaf::server
