// RoundRobustness: what robust aggregation did in a training round, typed — as a round close
// computes it, as the round's row keeps it (RoundRecord::robust_json, written and read back
// here) and as the status shows it (api/wire_json renders it).
//
//   RoundRobustness robust = closed_round_robustness(stats, withheld, next_bounds, next_cap);
//   closed.robust_json = robustness_json(robust);
//   read_robustness(closed.robust_json);   // the same parts again, for the status
//
// Every part is optional, present when the row holds it: an open round's row holds only the clip
// bounds and example cap it uses (round_clip_bounds.h), and rows stored by older servers lack the
// parts added since (bounds, row clips, example caps). The stored form of a part is its key in a
// JSON object: {"clipped": {tensor: reports}, "clipped_rows": {tensor: rows}, "clip_bound":
// {tensor: bound}, "next_clip_bound": {tensor: bound}, "capped": n, "example_cap": n or null,
// "next_example_cap": n, "withheld_rows": {tensor: rows}, "withheld_nonfinite": n, "staleness":
// {"<s>": reports}}. The last is not robust aggregation but a buffered version's staleness counts
// (version_staleness.h), kept in the one JSON column of the round's row rather than a new one; the
// status shows it beside "robust", not in it.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/aggregation/robust/adaptive_clip.h"
#include "core/aggregation/round/round_aggregator.h"
#include "server/repository/version_staleness.h"

namespace fedleaf::server {

struct RoundRobustness {
  using PerTensor = std::map<std::string, std::uint64_t>;
  std::optional<PerTensor> clipped;                 // reports scaled down by a clip
  std::optional<PerTensor> clipped_rows;            // rows scaled down by a row clip
  std::optional<core::ClipBounds> clip_bound;       // the bound each robust clip used
  std::optional<core::ClipBounds> next_clip_bound;  // the next round's (adaptive clips)
  std::optional<std::uint64_t> capped;              // reports weighed with the example cap
  // The cap the round weighed reports with; an empty inner value: the cap was off (null).
  std::optional<std::optional<std::uint64_t>> example_cap;
  std::optional<std::uint64_t> next_example_cap;    // the next round's (adaptive caps)
  std::optional<PerTensor> withheld_rows;           // rows below min_contributors, left unchanged
  std::optional<std::uint64_t> withheld_nonfinite;  // elements kept (not finite)
  // A buffered population's closed version: its reports by staleness (absent for synchronous
  // rounds, open versions and versions closed by servers before the count).
  std::optional<VersionStaleness> staleness;
};

// A closed round's parts, every one present but next_example_cap (adaptive caps only).
RoundRobustness closed_round_robustness(const core::RoundStats& stats,
                                        std::uint64_t withheld_nonfinite,
                                        const core::ClipBounds& next_clip_bounds,
                                        std::optional<std::uint64_t> next_example_cap);

// The parts present, each under its key: the stored form and the status's "robust" alike.
nlohmann::json robustness_to_json(const RoundRobustness& robust);

// The stored form (compact JSON, keys sorted).
std::string robustness_json(const RoundRobustness& robust);

// The parts a stored form holds. Throws fedleaf::Error (the store is damaged, not the request)
// for text that is not such an object, or a part of another type or name.
RoundRobustness read_robustness(const std::string& robust_json);

}  // namespace fedleaf::server
