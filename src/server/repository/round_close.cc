#include "server/repository/round_close.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/aggregation/next_round_plan.h"
#include "core/wire/safetensors.h"
#include "server/repository/round_clip_bounds.h"
#include "server/util/sha256.h"

namespace fedleaf::server {

std::string robust_json(const core::RoundStats& stats, std::uint64_t withheld_nonfinite,
                        const core::ClipBounds& next_clip_bounds,
                        std::optional<std::uint64_t> next_example_cap) {
  const auto bounds_json = [](const core::ClipBounds& bounds) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [tensor, bound] : bounds) out[tensor] = bound;
    return out;
  };
  nlohmann::json clipped = nlohmann::json::object();
  for (const auto& [tensor, reports] : stats.clipped_per_tensor) clipped[tensor] = reports;
  nlohmann::json clipped_rows = nlohmann::json::object();
  for (const auto& [tensor, rows] : stats.rows_clipped_per_tensor) clipped_rows[tensor] = rows;
  nlohmann::json withheld_rows = nlohmann::json::object();
  for (const auto& [tensor, rows] : stats.withheld_per_tensor) withheld_rows[tensor] = rows;
  nlohmann::json out{{"clipped", clipped},
                     {"clipped_rows", clipped_rows},
                     {"clip_bound", bounds_json(stats.clip_bound_per_tensor)},
                     {"next_clip_bound", bounds_json(next_clip_bounds)},
                     {"capped", stats.num_capped},
                     {"example_cap", stats.example_cap == 0 ? nlohmann::json(nullptr)
                                                            : nlohmann::json(stats.example_cap)},
                     {"withheld_rows", withheld_rows},
                     {"withheld_nonfinite", withheld_nonfinite}};
  if (next_example_cap) out["next_example_cap"] = *next_example_cap;
  return out.dump();
}

RoundClose close_training_round(const PopulationState& state, double now) {
  using PhaseClock = std::chrono::steady_clock;
  const auto seconds_since = [](PhaseClock::time_point start) {
    return std::chrono::duration<double>(PhaseClock::now() - start).count();
  };
  RoundClose out;
  auto start = PhaseClock::now();
  out.next = state.aggregator->next_model(&out.withheld_nonfinite);
  out.timings.finalize_s = seconds_since(start);
  start = PhaseClock::now();
  out.model_bytes = to_string_bytes(core::write_safetensors(out.next));
  out.timings.encode_s = seconds_since(start);
  start = PhaseClock::now();
  out.model_etag = sha256_hex(out.model_bytes);
  out.timings.hash_s = seconds_since(start);

  out.closed = state.round;
  out.closed.status = RoundStatus::kClosed;
  out.closed.closed_at = now;
  const core::RoundStats stats = state.aggregator->stats();
  out.next_clip_bounds = core::next_clip_bounds(*state.update_plan, stats);
  out.next_example_cap = core::next_example_cap(*state.update_plan, stats);
  out.closed.robust_json =
      robust_json(stats, out.withheld_nonfinite, out.next_clip_bounds, out.next_example_cap);
  out.opened.population_id = state.record.id;
  out.opened.number = out.closed.number + 1;
  out.opened.started_at = now;
  out.opened.deadline = now + state.record.settings.round_deadline_s;
  out.record = state.record;
  out.record.current_round = out.opened.number;
  out.training_over = out.opened.number >= out.record.settings.rounds;
  if (!out.training_over)
    out.opened.robust_json = open_round_robust_json(out.next_clip_bounds, out.next_example_cap);
  if (out.training_over && out.record.settings.eval_tasks_per_round == 0) {
    out.opened.status = RoundStatus::kClosed;
    out.opened.closed_at = now;
    out.record.state = RunState::kFinished;
  }
  return out;
}

}  // namespace fedleaf::server
