#include "server/repository/round_close.h"

#include <chrono>
#include <utility>
#include <vector>

#include "core/aggregation/round/next_round_plan.h"
#include "core/wire/safetensors.h"
#include "server/repository/buffered_step.h"
#include "server/repository/private_round.h"
#include "server/repository/round_clip_bounds.h"
#include "server/util/sha256.h"

namespace fedleaf::server {

RoundClose close_training_round(PopulationState& state, double now,
                                std::optional<VersionStaleness> staleness) {
  using PhaseClock = std::chrono::steady_clock;
  const auto seconds_since = [](PhaseClock::time_point start) {
    return std::chrono::duration<double>(PhaseClock::now() - start).count();
  };
  RoundClose out;
  auto start = PhaseClock::now();
  const bool unnormalized = state.buffered && state.buffered->normalization ==
                                                  core::StalenessNormalization::kUnnormalized;
  const bool is_private = state.aggregator->is_private();
  if (core::is_fedavg(state.optimizer) && !unnormalized && !is_private) {
    out.next = state.aggregator->take_next_model(&out.withheld_nonfinite);
  } else {
    const core::ServerOptimizer optimizer(state.optimizer);
    static const core::NamedTensors kInitial;
    // A private round releases only its noised sum, of tree round number + 1 (1-based), with
    // the noise drawn ahead when it was (noise_ahead.h); the server optimizer's step on it is
    // post-processing (FedAvg: model + delta).
    const auto tree_round = static_cast<std::uint64_t>(state.round.number) + 1;
    const std::shared_ptr<const core::RoundNoise> drawn =
        is_private && state.noise_ahead && state.noise_ahead->tree_round() == tree_round
            ? state.noise_ahead->take()
            : nullptr;
    std::vector<core::TensorAggregate> aggregates =
        is_private ? state.aggregator->private_aggregates(privacy_secret_of(state.record),
                                                          tree_round, drawn.get())
                   : state.aggregator->aggregates();
    if (is_private) out.timings.noise = drawn ? "ahead" : "inline";
    if (unnormalized) {
      // state.round holds every report of the version (lock_open_round), its examples capped.
      scale_aggregates(aggregates, *state.update_plan,
                       staleness_scale(state.aggregator->total_weight(), state.round.examples));
    }
    core::ServerOptimizerStep step =
        optimizer.step(state.aggregator->model(), aggregates,
                       state.optimizer_state ? *state.optimizer_state : kInitial);
    out.next = std::move(step.model);
    out.withheld_nonfinite = step.withheld_nonfinite;
    if (optimizer.stateful()) {
      out.optimizer_state_bytes = to_string_bytes(optimizer.save_state(step.state));
      out.optimizer_state = std::make_shared<const core::NamedTensors>(std::move(step.state));
    }
  }
  out.timings.finalize_s = seconds_since(start);
  start = PhaseClock::now();
  out.model_bytes = core::write_safetensors_string(out.next);
  out.timings.encode_s = seconds_since(start);
  start = PhaseClock::now();
  out.model_etag = sha256_hex(out.model_bytes);
  if (out.optimizer_state_bytes) out.optimizer_state_etag = sha256_hex(*out.optimizer_state_bytes);
  out.timings.hash_s = seconds_since(start);

  out.closed = state.round;
  out.closed.status = RoundStatus::kClosed;
  out.closed.closed_at = now;
  const core::RoundStats stats = state.aggregator->stats();
  out.next_clip_bounds = core::next_clip_bounds(*state.update_plan, stats);
  out.next_example_cap = core::next_example_cap(*state.update_plan, stats);
  out.robust = closed_round_robustness(stats, out.withheld_nonfinite, out.next_clip_bounds,
                                       out.next_example_cap);
  out.robust.staleness = std::move(staleness);
  out.closed.robust_json = robustness_json(out.robust);
  out.opened.population_id = state.record.id;
  out.opened.number = out.closed.number + 1;
  out.opened.started_at = now;
  out.opened.deadline = now + state.record.settings.round_deadline_s;
  out.record = state.record;
  out.record.current_round = out.opened.number;
  out.training_over = out.opened.number >= out.record.settings.rounds;
  // The budget: no training round opens whose release would pass max_epsilon (creation refuses
  // such rounds; this holds whatever the stored settings say).
  if (!out.training_over && state.privacy) {
    const std::string reason = privacy_budget_finish(*state.privacy, out.opened.number);
    if (!reason.empty()) {
      out.training_over = true;
      out.opened.status = RoundStatus::kClosed;
      out.opened.closed_at = now;
      out.record.state = RunState::kFinished;
      out.record.finish_reason = reason;
    }
  }
  if (!out.training_over)
    out.opened.robust_json = open_round_robust_json(out.next_clip_bounds, out.next_example_cap);
  if (out.training_over && out.record.settings.eval_tasks_per_round == 0) {
    out.opened.status = RoundStatus::kClosed;
    out.opened.closed_at = now;
    out.record.state = RunState::kFinished;
  }
  return out;
}

std::optional<OptimizerStateRecord> optimizer_state_record(const std::string& id,
                                                           const RoundClose& close) {
  if (!close.optimizer_state_bytes) return std::nullopt;
  return OptimizerStateRecord{id, close.opened.number, close.optimizer_state_etag,
                              *close.optimizer_state_bytes};
}

RoundCloseWrite round_close_write(const std::string& id, RoundClose& close) {
  RoundCloseWrite write{
      close.closed, close.record, close.opened,
      ModelRecord{id, close.opened.number, close.model_etag, std::move(close.model_bytes)},
      optimizer_state_record(id, close)};
  return write;
}

}  // namespace fedleaf::server
