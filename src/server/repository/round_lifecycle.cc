#include "server/repository/round_lifecycle.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include "core/aggregation/round/next_round_plan.h"
#include "core/aggregation/round/round_aggregator.h"
#include "server/repository/private_round.h"
#include "server/repository/round_close.h"
#include "server/util/server_errors.h"

namespace fedleaf::server {

RoundLifecycle::RoundLifecycle(RepositoryParts& parts) : parts_(parts) {
  if (parts_.options.close_in_background && !parts_.store.shared()) {
    closer_ = std::make_unique<RoundCloser>();
  }
}

RoundLifecycle::~RoundLifecycle() { stop_closer(); }

void RoundLifecycle::stop_closer() { closer_.reset(); }

void RoundLifecycle::wait_for_closes() {
  if (closer_) closer_->wait_idle();
}

void RoundLifecycle::advance(PopulationState& st, double now) {
  for (;;) {
    switch (next_round_step(st.record, st.round, now)) {
      case RoundStep::kStay:
        draw_noise_ahead(st);
        return;
      case RoundStep::kCloseTraining:
        // A buffered population closes its version inline: the upload completing the buffer
        // publishes the next version before it is answered, so the next report folds into it
        // (a background close would leave no open buffer to fold into meanwhile).
        if (closer_ && !st.buffered) {
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
    parts_.waiters.notify(st.record.id);
  }
}

bool RoundLifecycle::lock_round_to_close(PopulationState& st, double now) {
  std::optional<RoundRecord> locked = parts_.store.lock_open_round(st.record.id, st.round.number);
  if (!locked) {
    st.round.status = RoundStatus::kClosed;  // by another server: reload() follows
    return false;
  }
  st.round = *locked;  // every report any server accepted
  return next_round_step(st.record, st.round, now) != RoundStep::kStay;
}

void RoundLifecycle::commit_before_close() {
  if (!parts_.store.shared()) return;
  try {
    parts_.batch.commit(false);  // earlier than its answers need: they are still released after a
                                 // later commit (and sync) of GroupCommit
  } catch (const std::exception& e) {
    throw Unavailable(std::string("commit before a round close: store failure: ") + e.what());
  }
}

void RoundLifecycle::publish_next_model(PopulationState& st, double now) {
  const std::string id = st.record.id;
  std::optional<RoundClose> close;
  double persist_s = 0;  // the model's bytes made durable (a file), for fedleaf_phase_seconds
  double store_s = 0;    // the close's rows
  // A step of the batch like any other: whoever learns of the new round waits for its commit
  // (claims) or its sync (uploads, model and status reads; see Router). The round's row lock
  // (held until the batch commits) makes this server the only one that closes it.
  commit_before_close();
  parts_.population_step(id, "close round", [&] {
    if (!lock_round_to_close(st, now)) return;
    // The aggregator holds results this server accepted (or loaded) in seq order: when they are
    // as many as the round's, they are all of them (a server sharing its store rebuilds
    // otherwise, from every server's results).
    if (!st.aggregator_in_seq_order ||
        st.aggregator->num_reports() != static_cast<std::size_t>(st.round.reports)) {
      rebuild_aggregator(parts_.store, st);
    }
    // st.optimizer_state is the state the previous close wrote, whichever server ran it: it was
    // stored in the transaction that opened this round, never changes, and was read with the
    // round (load_population_state; a server that saw another close reloads).
    close = close_training_round(st, now, buffered_staleness(st));
    const auto persist_start = std::chrono::steady_clock::now();
    // The model's bytes move into the records the store reads and back (no 16.8 MB copies).
    RoundCloseWrite write = round_close_write(id, *close);
    parts_.store.persist_model(*write.model);
    if (write.optimizer_state) parts_.store.persist_optimizer_state(*write.optimizer_state);
    const auto store_start = std::chrono::steady_clock::now();
    persist_s = std::chrono::duration<double>(store_start - persist_start).count();
    parts_.store.close_round(write);
    if (close->record.finish_reason != st.record.finish_reason) {
      parts_.store.set_finish_reason(id, close->record.finish_reason);  // the privacy budget
    }
    close->model_bytes = std::move(write.model->bytes);
    drop_old_models(id, close->opened.number, now);
    store_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - store_start).count();
  });
  if (!close) {
    if (st.round.status != RoundStatus::kOpen) parts_.populations.reload(st);
    return;
  }
  apply_close(st, *close, persist_s, store_s);
}

std::optional<VersionStaleness> RoundLifecycle::buffered_staleness(const PopulationState& st) {
  if (!st.buffered) return std::nullopt;
  // Under the round's lock: every report any server folded into the version, each with the round
  // its task was handed out on (the server's record), the same set the aggregate was rebuilt from.
  return version_staleness(parts_.store.count_results_by_task_round(st.record.id, st.round.number),
                           st.round.number);
}

void RoundLifecycle::drop_old_models(const std::string& population_id, int published_round,
                                     double now) {
  if (parts_.options.keep_models <= 0) return;
  const std::vector<int> dropped = parts_.store.drop_models(
      population_id, published_round - parts_.options.keep_models + 1, now);
  if (parts_.options.logger && !dropped.empty()) {
    parts_.options.logger->debug("event=models_dropped population={} rounds={}..{} count={}",
                                 population_id, dropped.front(), dropped.back(), dropped.size());
  }
}

void RoundLifecycle::drop_closed_results(PopulationState& st) {
  if (st.results_to_drop_through < 0) return;
  const int through = st.results_to_drop_through;
  st.results_to_drop_through = -1;
  const auto start = std::chrono::steady_clock::now();
  try {
    parts_.batch.step("drop closed results",
                      [&] { parts_.store.drop_results(st.record.id, through); });
  } catch (const std::exception& e) {
    // Left for the next close's drop (every round up to its own) or a restart's.
    if (parts_.options.logger) {
      parts_.options.logger->warn("event=drop_results_failed population={} round={} error=\"{}\"",
                                  st.record.id, through, e.what());
    }
    return;
  }
  parts_.metrics.observe_phase(
      "drop_results",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

void RoundLifecycle::apply_close(PopulationState& st, RoundClose& close, double persist_s,
                                 double store_s) {
  const std::string id = st.record.id;
  if (close.withheld_nonfinite > 0 && parts_.options.logger) {
    parts_.options.logger->warn(
        "event=round_overflow_withheld population={} round={} elements={} (each kept its old "
        "value: the aggregate would not have been finite)",
        id, st.round.number, close.withheld_nonfinite);
  }
  const RoundRecord& closed = close.closed;
  const RoundCloseTimings& t = close.timings;
  parts_.metrics.observe_round_duration(closed.closed_at - closed.started_at);
  parts_.metrics.observe_phase("close_finalize", t.finalize_s);
  parts_.metrics.observe_phase("close_encode", t.encode_s);
  parts_.metrics.observe_phase("close_hash", t.hash_s);
  parts_.metrics.observe_phase("close_persist", persist_s);
  parts_.metrics.observe_phase("close_store", store_s);
  if (parts_.options.logger) {
    parts_.options.logger->info(
        "event=round_closed population={} round={} reports={} examples={} duration_s={:.3f} "
        "model_etag={} model_bytes={} finalize_ms={:.1f} encode_ms={:.1f} hash_ms={:.1f} "
        "persist_ms={:.1f} store_ms={:.1f}{}{}",
        id, closed.number, closed.reports, closed.examples, closed.closed_at - closed.started_at,
        close.model_etag, close.model_bytes.size(), 1e3 * t.finalize_s, 1e3 * t.encode_s,
        1e3 * t.hash_s, 1e3 * persist_s, 1e3 * store_s, *t.noise ? " noise=" : "", t.noise);
  }
  st.record = close.record;
  st.round = close.opened;
  st.model = {close.model_etag, std::make_shared<const std::string>(std::move(close.model_bytes))};
  st.result_seq = st.checkpoint_seq = 0;
  st.aggregator_in_seq_order = true;
  st.optimizer_state = std::move(close.optimizer_state);
  st.noise_ahead.reset();  // the next round's is drawn once it is open (draw_noise_ahead)
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
  if (parts_.options.logger && st.record.state == RunState::kFinished) {
    parts_.options.logger->info("event=population_finished population={} rounds={}", id,
                                st.record.settings.rounds);
  }
}

void RoundLifecycle::draw_noise_ahead(PopulationState& st) {
  if (!closer_ || st.closing != 0 || st.buffered || !st.aggregator ||
      !st.aggregator->is_private()) {
    return;
  }
  const auto tree_round = static_cast<std::uint64_t>(st.round.number) + 1;
  if (st.noise_ahead && st.noise_ahead->tree_round() == tree_round) return;
  // Set first: a population whose draw cannot start is not retried on every claim; its close
  // draws inline and reports the failure there.
  st.noise_ahead = std::make_shared<NoiseAhead>(tree_round);
  core::TreeNoiseSecret secret;
  try {
    secret = privacy_secret_of(st.record);
  } catch (const Error&) {
    return;  // a damaged store: the close names it
  }
  closer_->post(noise_draw_job(st.noise_ahead, st.aggregator->private_noise_shape(), secret,
                               st.record.id, parts_.options.logger));
  volatile std::uint8_t* key = secret.data();
  for (std::size_t i = 0; i < secret.size(); ++i) key[i] = 0;
}

void RoundLifecycle::schedule_close(PopulationState& st, double now) {
  if (st.closing != 0) return;
  if (!st.aggregator_in_seq_order || st.result_seq != st.round.reports) {
    rebuild_aggregator(parts_.store, st);
  }
  auto snapshot = std::make_shared<PopulationState>();
  snapshot->record = st.record;
  snapshot->round = st.round;
  snapshot->update_plan = st.update_plan;
  snapshot->aggregator = std::move(st.aggregator);
  snapshot->optimizer = st.optimizer;
  snapshot->optimizer_state = st.optimizer_state;
  snapshot->noise_ahead = st.noise_ahead;
  st.aggregator.reset();
  st.closing = ++last_close_id_;
  closer_->post(
      [this, close_id = st.closing, snapshot, now] { run_close(close_id, *snapshot, now); });
  // While the closer computes the next model on the other core, with no lock, and the leaves
  // wait for the next round: the time no one waits for.
  drop_closed_results(st);
}

void RoundLifecycle::run_close(std::uint64_t close_id, PopulationState& snapshot, double now) {
  const std::string& id = snapshot.record.id;
  const auto seconds_since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  try {
    // Outside the mutex: the next model, its bytes, their hash, the durable model file.
    RoundClose close = close_training_round(snapshot, now);
    const auto persist_start = std::chrono::steady_clock::now();
    // The model's bytes move into the records the store reads and back (no 16.8 MB copies).
    RoundCloseWrite write = round_close_write(id, close);
    // Deleting the round's results is most of the close step's time, which every parked claim
    // waits for: a later step does it (drop_closed_results).
    write.drop_results = false;
    parts_.store.persist_model(*write.model);
    if (write.optimizer_state) parts_.store.persist_optimizer_state(*write.optimizer_state);
    const double persist_s = seconds_since(persist_start);

    std::lock_guard lock(parts_.mutex);
    PopulationState* found = parts_.populations.loaded(id);
    // A failed batch dropped the state meanwhile: the reloaded state closes the round anew.
    if (!found || found->closing != close_id) return;
    PopulationState& st = *found;
    st.closing = 0;
    bool closed = false;
    double store_s = 0;
    parts_.population_step(id, "close round", [&] {
      if (!lock_round_to_close(st, now)) return;
      if (st.round.reports != snapshot.round.reports) {
        throw Error("round " + std::to_string(st.round.number) + " took reports while closing");
      }
      const auto store_start = std::chrono::steady_clock::now();
      parts_.store.close_round(write);
      drop_old_models(id, close.opened.number, now);
      store_s = seconds_since(store_start);
      closed = true;
    });
    close.model_bytes = std::move(write.model->bytes);
    if (!closed) {
      parts_.populations.reload(st);
    } else {
      apply_close(st, close, persist_s, store_s);
      st.results_to_drop_through = close.closed.number;
    }
    parts_.waiters.notify(id);
    advance(st, parts_.clock.now());
    // Nobody's answer waits for the close itself, and a batch that was open need not be followed
    // by a commit soon: commit it, so that a killed process keeps it.
    parts_.batch.commit(false);
  } catch (const std::exception& e) {
    if (parts_.options.logger) {
      parts_.options.logger->error("event=round_close_failed population={} round={} error=\"{}\"",
                                   id, snapshot.round.number, e.what());
    }
    // The round is still open in the store with its results: drop the state, so that its next
    // use reloads it and closes the round again.
    std::lock_guard lock(parts_.mutex);
    PopulationState* found = parts_.populations.loaded(id);
    if (found && found->closing == close_id) parts_.populations.erase(id);
  }
}

void RoundLifecycle::finish(PopulationState& st, double now) {
  const std::string id = st.record.id;
  std::optional<RoundCloseWrite> close;
  commit_before_close();
  parts_.population_step(id, "finish population", [&] {
    if (!lock_round_to_close(st, now)) return;
    close.emplace();
    close->closed = st.round;
    close->closed.status = RoundStatus::kClosed;
    close->closed.closed_at = now;
    close->population = st.record;
    close->population.state = RunState::kFinished;
    parts_.store.close_round(*close);
  });
  if (!close) {
    if (st.round.status != RoundStatus::kOpen) parts_.populations.reload(st);
    return;
  }
  st.round = close->closed;
  st.record = close->population;
  if (parts_.options.logger) {
    parts_.options.logger->info("event=population_finished population={} rounds={} eval_reports={}",
                                id, st.record.settings.rounds, st.round.eval_reports);
  }
}

void RoundLifecycle::wait_for_close_past(const std::string& population_id, int round) {
  if (!closer_) return;
  {
    std::lock_guard lock(parts_.mutex);
    const PopulationState* found = parts_.populations.loaded(population_id);
    if (!found || found->closing == 0) return;
    if (round <= found->round.number) return;
  }
  closer_->wait_idle();
}

bool RoundLifecycle::has_task_to_offer(const PopulationState& st, double now) {
  if (st.record.state != RunState::kRunning || st.closing != 0) return false;
  const bool train_left = st.round.number < st.record.settings.rounds &&
                          st.round.train_tasks < st.record.settings.train_tasks_per_round;
  const bool eval_left = st.round.eval_tasks < st.record.settings.eval_tasks_per_round;
  return train_left || eval_left ||
         parts_.store.has_leasable_task(st.record.id, st.round.number, now);
}

bool RoundLifecycle::buffered_slot_freed(const PopulationState& st, double now) {
  if (!st.buffered || st.record.state != RunState::kRunning) return false;
  // A lease of an older version is never handed out again (claims lease the open version), so
  // has_expired_lease of the open round misses it: what frees the slot is its expiry itself,
  // i.e. tasks out at the last tick that are not out now (out(t) counts leases valid after t).
  const std::int64_t out = parts_.store.count_out_tasks(st.record.id, TaskKind::kTrain, now);
  if (out >= static_cast<std::int64_t>(st.buffered->concurrency)) return false;
  return parts_.store.count_out_tasks(st.record.id, TaskKind::kTrain, last_tick_at_) > out;
}

void RoundLifecycle::tick() {
  std::lock_guard lock(parts_.mutex);
  const bool batch_was_open = parts_.batch.is_open();
  const double now = parts_.clock.now();
  // With a shared store any server's tick may close a round (no leader): every running
  // population, not only those this server has loaded.
  std::vector<std::string> ids;
  if (parts_.store.shared()) {
    for (const PopulationRecord& p : parts_.store.list_populations()) {
      if (p.state == RunState::kRunning) ids.push_back(p.id);
    }
  } else {
    ids = parts_.populations.loaded_ids();
  }
  for (const std::string& id : ids) {
    if (parts_.populations.quarantine_holds(id)) continue;
    try {
      PopulationState& st = parts_.populations.state_of(id);
      advance(st, now);
      // A lease that expired hands its task back: wake the claims waiting for one. On a shared
      // store a claim may also have parked while another server held what it needed (the round
      // row creating tasks, a close): nothing here would wake it, so the tick wakes the claims
      // waiting for a round that has a task to lease or to create.
      if (parts_.waiters.waiting(id) > 0 &&
          (parts_.store.has_expired_lease(id, st.round.number, now) ||
           buffered_slot_freed(st, now) || (parts_.store.shared() && has_task_to_offer(st, now)))) {
        parts_.waiters.notify(id);
      }
    } catch (const std::exception& e) {
      if (parts_.options.logger) {
        parts_.options.logger->error("event=tick_failed population={} error=\"{}\"", id, e.what());
      }
    }
  }
  last_tick_at_ = now;
  // Nobody waits for what the tick did: commit it here, also into a batch that was already open
  // (its waiters, if any, sync it; a shared store's other servers may be waiting on the rows a
  // close here locked, and a batch is not always followed by a commit soon). Synced when the
  // tick opened the batch.
  if (!parts_.batch.is_open()) return;
  try {
    parts_.batch.commit(!batch_was_open);
  } catch (const std::exception& e) {
    if (parts_.options.logger)
      parts_.options.logger->error("event=tick_commit_failed error=\"{}\"", e.what());
  }
}

void RoundLifecycle::checkpoint_all() {
  wait_for_closes();
  std::lock_guard lock(parts_.mutex);
  // A shared store's rounds are rebuilt from their stored results (accept_train).
  if (parts_.store.shared()) return;
  for (auto& [id, st] : parts_.populations.all()) {
    // Only an aggregator of results 1..result_seq in seq order is a checkpoint of them (a
    // server sharing its store holds just the results it accepted).
    if (!st->aggregator || st->aggregator->is_private() || !st->aggregator_in_seq_order ||
        st->result_seq <= st->checkpoint_seq) {
      continue;
    }
    const CheckpointRecord checkpoint{id, st->round.number, st->result_seq,
                                      to_string_bytes(st->aggregator->checkpoint())};
    parts_.batch.step(
        "checkpoint", [&] { parts_.store.put_checkpoint(checkpoint); }, Durability::kFull);
    st->checkpoint_seq = st->result_seq;
  }
}
}  // namespace fedleaf::server
