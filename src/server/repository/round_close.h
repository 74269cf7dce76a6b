// RoundClose: what closing a training round writes — the closed round's record (with what robust
// aggregation did), the next round's record, the population's record and the published model —
// computed from the in-memory state alone (no store, no clock), so the rules are tested without
// either and the repository only stores the result.
//
//   RoundClose close = close_training_round(state, now);
//   store.update_round(close.closed); store.insert_round(close.opened); ...
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/aggregation/round/round_aggregator.h"
#include "core/tensor/tensor.h"
#include "server/repository/population_state.h"
#include "server/repository/round_robustness.h"
#include "server/repository/version_staleness.h"
#include "server/store/store.h"

namespace fedleaf::server {

// Seconds each step of close_training_round took (a steady clock: durations, not state).
struct RoundCloseTimings {
  double finalize_s = 0;  // the next model from the aggregate
  double encode_s = 0;    // its safetensors
  double hash_s = 0;      // sha256 of the bytes
  // A private round's release: "ahead" when its noise was drawn while the round was open
  // (noise_ahead.h), "inline" when the finalize drew it; "" for a round that is not private.
  const char* noise = "";
};

struct RoundClose {
  RoundRecord closed;       // status "closed", closed_at, robust_json (robustness_json(robust))
  RoundRecord opened;       // the next round (robust_json: its clip bounds); already closed when
                            // training ends without eval
  PopulationRecord record;  // current_round advanced; "finished" when nothing is left to do
  core::NamedTensors next;  // the published model's tensors
  std::string model_bytes;  // safetensors of `next`
  std::string model_etag;   // sha256 of model_bytes
  std::uint64_t withheld_nonfinite = 0;           // elements kept at their old value (not finite)
  RoundRobustness robust;                         // what robust aggregation did in the round
  core::ClipBounds next_clip_bounds;              // the next round's adaptive clip bounds
  std::optional<std::uint64_t> next_example_cap;  // the next round's adaptive example cap
  bool training_over = false;                     // no training round follows
  // The server optimizer's state after this close, and its bytes and their sha256 for the store
  // (empty for an optimizer that keeps none).
  std::shared_ptr<const core::NamedTensors> optimizer_state;
  std::optional<std::string> optimizer_state_bytes;
  std::string optimizer_state_etag;
  RoundCloseTimings timings;
};

// Requires an open training round with its aggregator (state.aggregator). The next model is
// the aggregator's next_model() under FedAvg (state.optimizer's default: the published bytes are
// those of every earlier version), else the server optimizer's step from state.optimizer_state.
// `staleness`: a buffered version's reports by staleness (version_staleness.h), which the caller
// counts in the store under the round's lock; recorded in robust.staleness and the closed row's
// robust_json.
// The close is the aggregator's last use: under FedAvg the next model is built in the round's
// model itself (RoundAggregator::take_next_model, no 16.8 MB copy on the demo job), so
// state.aggregator holds no model afterwards and the caller replaces it (apply_close) or drops
// the state.
RoundClose close_training_round(PopulationState& state, double now,
                                std::optional<VersionStaleness> staleness = std::nullopt);

// What the store writes for `close` of population `id`, and the optimizer state alone (for
// Store::persist_optimizer_state; nullopt without one). round_close_write moves
// close.model_bytes into the write's model record (a demo model is 16.8 MB, copied twice per
// close before): the caller moves them back (close.model_bytes = std::move(write.model->bytes))
// once the store has written them.
RoundCloseWrite round_close_write(const std::string& id, RoundClose& close);
std::optional<OptimizerStateRecord> optimizer_state_record(const std::string& id,
                                                           const RoundClose& close);

}  // namespace fedleaf::server
