// The adaptive clip bounds (core/aggregation/robust/adaptive_clip.h) and the adaptive example cap
// (core/aggregation/robust/adaptive_example_cap.h) a training round uses, kept in the round's own
// row: its robust_json says {"clip_bound": {tensor: bound}, "example_cap": N} from the moment the
// round opens (the close of the round before writes it, with the next round's row), so a restart, a
// checkpoint restore and every server sharing the store build the round's aggregator with the
// same bounds. No schema change: robust_json is the round's column for robust aggregation.
//
//   core::UpdatePlan round_plan = core::with_clip_bounds(*st.update_plan,
//   round_clip_bounds(round)); opened.robust_json =
//   open_round_robust_json(core::next_clip_bounds(*st.update_plan, stats));
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/aggregation/robust/adaptive_clip.h"
#include "server/store/store.h"

namespace fedleaf::server {

// The bounds stored with `round` ({} for a round opened by a server that predates adaptive
// clipping, or a plan without one: its aggregator then uses the plan's initial bounds). Throws
// InvalidInput when robust_json is not a JSON object or "clip_bound" is not an object of numbers.
core::ClipBounds round_clip_bounds(const RoundRecord& round);

// The adaptive example cap stored with `round` (nullopt for a round opened before adaptive caps,
// or a plan whose cap is fixed or off: its aggregator then uses the plan's cap). Throws
// InvalidInput when robust_json is not a JSON object or "example_cap" is not an integer in
// [1, 2^53].
std::optional<std::uint64_t> round_example_cap(const RoundRecord& round);

// robust_json of a round about to open with `bounds` and `example_cap`: {"clip_bound": {...},
// "example_cap": N}, each only when there is one ("{}" for neither).
std::string open_round_robust_json(const core::ClipBounds& bounds,
                                   std::optional<std::uint64_t> example_cap);

}  // namespace fedleaf::server
