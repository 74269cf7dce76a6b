// TaskRepository: how a population's rounds move on — a round due to close is locked, closed
// (inline, or on the RoundCloser without the mutex) and its next model published; a finished
// population is marked so. The requests that drive this are in task_repository.cc.
#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

#include "core/aggregation/next_round_plan.h"
#include "core/aggregation/round_aggregator.h"
#include "server/repository/population_state.h"
#include "server/repository/round_close.h"
#include "server/repository/task_repository.h"
#include "server/util/server_errors.h"

namespace fedleaf::server {

void TaskRepository::advance(PopulationState& st, double now) {
  for (;;) {
    switch (next_round_step(st.record, st.round, now)) {
      case RoundStep::kStay:
        return;
      case RoundStep::kCloseTraining:
        if (closer_) {
          schedule_close(st, now);  // the close job notifies the waiters
          return;
        }
        publish_next_model(st, now);
        break;
      case RoundStep::kFinish:
        finish(st, now);
        break;
    }
    // A new round has new tasks; a finished population answers its waiters "finished".
    waiters_.notify(st.record.id);
  }
}

bool TaskRepository::lock_round_to_close(PopulationState& st, double now) {
  std::optional<RoundRecord> locked = store_.lock_open_round(st.record.id, st.round.number);
  if (!locked) {
    st.round.status = RoundStatus::kClosed;  // by another server: reload() follows
    return false;
  }
  st.round = *locked;  // every report any server accepted
  return next_round_step(st.record, st.round, now) != RoundStep::kStay;
}

void TaskRepository::commit_before_close() {
  if (!store_.shared()) return;
  try {
    batch_.commit(false);  // earlier than its answers need: they are still released after a
                           // later commit (and sync) of GroupCommit
  } catch (const std::exception& e) {
    throw Unavailable(std::string("commit before a round close: store failure: ") + e.what());
  }
}

void TaskRepository::reload(PopulationState& st) {
  std::optional<PopulationRecord> record = store_.find_population(st.record.id);
  if (!record) throw NotFound("population '" + st.record.id + "' does not exist");
  st = std::move(*load_population_state_consistently(store_, *record));
}

void TaskRepository::publish_next_model(PopulationState& st, double now) {
  const std::string id = st.record.id;
  std::optional<RoundClose> close;
  double persist_s = 0;  // the model's bytes made durable (a file), for fedleaf_phase_seconds
  double store_s = 0;    // the close's rows
  // A step of the batch like any other: whoever learns of the new round waits for its commit
  // (claims) or its sync (uploads, model and status reads; see Router). The round's row lock
  // (held until the batch commits) makes this server the only one that closes it.
  commit_before_close();
  population_step(id, "close round", [&] {
    if (!lock_round_to_close(st, now)) return;
    // The aggregator holds results this server accepted (or loaded) in seq order: when they are
    // as many as the round's, they are all of them (a server sharing its store rebuilds
    // otherwise, from every server's results).
    if (!st.aggregator_in_seq_order ||
        st.aggregator->num_reports() != static_cast<std::size_t>(st.round.reports)) {
      rebuild_aggregator(store_, st);
    }
    close = close_training_round(st, now);
    const auto persist_start = std::chrono::steady_clock::now();
    store_.persist_model({id, close->opened.number, close->model_etag, close->model_bytes});
    const auto store_start = std::chrono::steady_clock::now();
    persist_s = std::chrono::duration<double>(store_start - persist_start).count();
    store_.close_round(
        {close->closed, close->record, close->opened,
         ModelRecord{id, close->opened.number, close->model_etag, close->model_bytes}});
    drop_old_models(id, close->opened.number, now);
    store_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - store_start).count();
  });
  if (!close) {
    if (st.round.status != RoundStatus::kOpen) reload(st);
    return;
  }
  apply_close(st, *close, persist_s, store_s);
}

void TaskRepository::drop_old_models(const std::string& population_id, int published_round,
                                     double now) {
  if (options_.keep_models <= 0) return;
  const std::vector<int> dropped =
      store_.drop_models(population_id, published_round - options_.keep_models + 1, now);
  if (options_.logger && !dropped.empty()) {
    options_.logger->debug("event=models_dropped population={} rounds={}..{} count={}",
                           population_id, dropped.front(), dropped.back(), dropped.size());
  }
}

void TaskRepository::drop_closed_results(PopulationState& st) {
  if (st.results_to_drop_through < 0) return;
  const int through = st.results_to_drop_through;
  st.results_to_drop_through = -1;
  const auto start = std::chrono::steady_clock::now();
  try {
    batch_.step("drop closed results", [&] { store_.drop_results(st.record.id, through); });
  } catch (const std::exception& e) {
    // Left for the next close's drop (every round up to its own) or a restart's.
    if (options_.logger) {
      options_.logger->warn("event=drop_results_failed population={} round={} error=\"{}\"",
                            st.record.id, through, e.what());
    }
    return;
  }
  metrics_.observe_phase(
      "drop_results",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

void TaskRepository::apply_close(PopulationState& st, RoundClose& close, double persist_s,
                                 double store_s) {
  const std::string id = st.record.id;
  if (close.withheld_nonfinite > 0 && options_.logger) {
    options_.logger->warn(
        "event=round_overflow_withheld population={} round={} elements={} (each kept its old "
        "value: the aggregate would not have been finite)",
        id, st.round.number, close.withheld_nonfinite);
  }
  const RoundRecord& closed = close.closed;
  const RoundCloseTimings& t = close.timings;
  metrics_.observe_round_duration(closed.closed_at - closed.started_at);
  metrics_.observe_phase("close_finalize", t.finalize_s);
  metrics_.observe_phase("close_encode", t.encode_s);
  metrics_.observe_phase("close_hash", t.hash_s);
  metrics_.observe_phase("close_persist", persist_s);
  metrics_.observe_phase("close_store", store_s);
  if (options_.logger) {
    options_.logger->info(
        "event=round_closed population={} round={} reports={} examples={} duration_s={:.3f} "
        "model_etag={} model_bytes={} finalize_ms={:.1f} encode_ms={:.1f} hash_ms={:.1f} "
        "persist_ms={:.1f} store_ms={:.1f}",
        id, closed.number, closed.reports, closed.examples, closed.closed_at - closed.started_at,
        close.model_etag, close.model_bytes.size(), 1e3 * t.finalize_s, 1e3 * t.encode_s,
        1e3 * t.hash_s, 1e3 * persist_s, 1e3 * store_s);
  }
  st.record = close.record;
  st.round = close.opened;
  st.model = {close.model_etag, std::make_shared<const std::string>(std::move(close.model_bytes))};
  st.result_seq = st.checkpoint_seq = 0;
  st.aggregator_in_seq_order = true;
  if (close.training_over) {
    st.aggregator.reset();
  } else {
    core::UpdatePlan round_plan = core::with_clip_bounds(*st.update_plan, close.next_clip_bounds);
    if (close.next_example_cap) {
      round_plan = core::with_example_cap(std::move(round_plan), *close.next_example_cap);
    }
    st.aggregator.emplace(std::move(round_plan), std::move(close.next),
                          expected_reports(st.record));
  }
  if (options_.logger && st.record.state == RunState::kFinished) {
    options_.logger->info("event=population_finished population={} rounds={}", id,
                          st.record.settings.rounds);
  }
}

void TaskRepository::schedule_close(PopulationState& st, double now) {
  if (st.closing != 0) return;
  if (!st.aggregator_in_seq_order || st.result_seq != st.round.reports) {
    rebuild_aggregator(store_, st);
  }
  auto snapshot = std::make_shared<PopulationState>();
  snapshot->record = st.record;
  snapshot->round = st.round;
  snapshot->update_plan = st.update_plan;
  snapshot->aggregator = std::move(st.aggregator);
  st.aggregator.reset();
  st.closing = ++last_close_id_;
  closer_->post(
      [this, close_id = st.closing, snapshot, now] { run_close(close_id, *snapshot, now); });
  // While the closer computes the next model on the other core, with no lock, and the leaves
  // wait for the next round: the time no one waits for.
  drop_closed_results(st);
}

void TaskRepository::run_close(std::uint64_t close_id, const PopulationState& snapshot,
                               double now) {
  const std::string& id = snapshot.record.id;
  const auto seconds_since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  try {
    // Outside the mutex: the next model, its bytes, their hash, the durable model file.
    RoundClose close = close_training_round(snapshot, now);
    const ModelRecord model{id, close.opened.number, close.model_etag, close.model_bytes};
    const auto persist_start = std::chrono::steady_clock::now();
    store_.persist_model(model);
    const double persist_s = seconds_since(persist_start);

    std::lock_guard lock(mutex_);
    auto it = populations_.find(id);
    // A failed batch dropped the state meanwhile: the reloaded state closes the round anew.
    if (it == populations_.end() || it->second->closing != close_id) return;
    PopulationState& st = *it->second;
    st.closing = 0;
    const bool batch_was_open = batch_.is_open();
    bool closed = false;
    double store_s = 0;
    population_step(id, "close round", [&] {
      if (!lock_round_to_close(st, now)) return;
      if (st.round.reports != snapshot.round.reports) {
        throw Error("round " + std::to_string(st.round.number) + " took reports while closing");
      }
      const auto store_start = std::chrono::steady_clock::now();
      RoundCloseWrite write{close.closed, close.record, close.opened, model};
      // Deleting the round's results is most of this step's time, which every parked claim
      // waits for: a later step does it (drop_closed_results).
      write.drop_results = false;
      store_.close_round(write);
      drop_old_models(id, close.opened.number, now);
      store_s = seconds_since(store_start);
      closed = true;
    });
    if (!closed) {
      reload(st);
    } else {
      apply_close(st, close, persist_s, store_s);
      st.results_to_drop_through = close.closed.number;
    }
    waiters_.notify(id);
    advance(st, clock_.now());
    // Nobody's answer waits for the close itself (a batch that was open has waiters, whose group
    // commit includes it): commit it, so that a killed process keeps it.
    if (!batch_was_open) batch_.commit(false);
  } catch (const std::exception& e) {
    if (options_.logger) {
      options_.logger->error("event=round_close_failed population={} round={} error=\"{}\"", id,
                             snapshot.round.number, e.what());
    }
    // The round is still open in the store with its results: drop the state, so that its next
    // use reloads it and closes the round again.
    std::lock_guard lock(mutex_);
    auto it = populations_.find(id);
    if (it != populations_.end() && it->second->closing == close_id) populations_.erase(it);
  }
}

void TaskRepository::finish(PopulationState& st, double now) {
  const std::string id = st.record.id;
  std::optional<RoundCloseWrite> close;
  commit_before_close();
  population_step(id, "finish population", [&] {
    if (!lock_round_to_close(st, now)) return;
    close.emplace();
    close->closed = st.round;
    close->closed.status = RoundStatus::kClosed;
    close->closed.closed_at = now;
    close->population = st.record;
    close->population.state = RunState::kFinished;
    store_.close_round(*close);
  });
  if (!close) {
    if (st.round.status != RoundStatus::kOpen) reload(st);
    return;
  }
  st.round = close->closed;
  st.record = close->population;
  if (options_.logger) {
    options_.logger->info("event=population_finished population={} rounds={} eval_reports={}", id,
                          st.record.settings.rounds, st.round.eval_reports);
  }
}

void TaskRepository::wait_for_close_past(const std::string& population_id, int round) {
  if (!closer_) return;
  {
    std::lock_guard lock(mutex_);
    auto it = populations_.find(population_id);
    if (it == populations_.end() || it->second->closing == 0) return;
    if (round <= it->second->round.number) return;
  }
  closer_->wait_idle();
}

void TaskRepository::wait_for_closes() {
  if (closer_) closer_->wait_idle();
}

}  // namespace fedleaf::server
