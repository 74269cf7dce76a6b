#include "server/repository/population_control.h"

#include <spdlog/spdlog.h>

#include <limits>
#include <optional>

#include "core/text/text_format.h"
#include "server/util/server_errors.h"

namespace fedleaf::server {

PopulationControl::PopulationControl(RepositoryParts& parts, RoundLifecycle& rounds)
    : parts_(parts), rounds_(rounds) {}

PopulationState& PopulationControl::changeable(const std::string& population_id,
                                               const char* action) {
  // A quarantined population's state could not be read: nothing about it can be changed safely.
  if (parts_.populations.quarantine_holds(population_id)) {
    throw Conflict("population '" + population_id + "' failed to load (" +
                   *parts_.populations.quarantine_reason(population_id) + "): it cannot be " +
                   action + "; only a running or paused population can");
  }
  PopulationState& st = parts_.populations.state_of(population_id);
  rounds_.advance(st, parts_.clock.now());
  if (st.record.state == RunState::kFinished) {
    throw Conflict("population '" + population_id + "' is finished: it cannot be " + action +
                   "; only a running or paused population can");
  }
  return st;
}

void PopulationControl::set_paused(const std::string& population_id, bool paused) {
  const char* action = paused ? "paused" : "resumed";
  std::lock_guard lock(parts_.mutex);
  PopulationState& st = changeable(population_id, action);
  if (st.record.paused == paused) {
    throw Conflict("population '" + population_id + "' is " +
                   (paused ? "paused already: only a running population can be paused"
                           : "running, not paused: only a paused population can be resumed"));
  }
  bool changed = false;
  try {
    parts_.batch.step(
        paused ? "pause population" : "resume population",
        [&] { changed = parts_.store.set_paused(population_id, paused); }, Durability::kFull);
  } catch (...) {
    parts_.populations.erase(population_id);
    throw;
  }
  if (!changed) {
    // Another server sharing the store changed it first: say what it is now.
    parts_.populations.reload(st);
    throw Conflict("population '" + population_id + "' is " +
                   (st.record.state == RunState::kFinished ? "finished"
                    : st.record.paused                     ? "paused already"
                                                           : "running, not paused") +
                   ": it cannot be " + action);
  }
  st.record.paused = paused;
  if (!paused) parts_.waiters.notify(population_id);
  if (parts_.options.logger) {
    parts_.options.logger->info("event=population_{} population={} round={}",
                                paused ? "paused" : "resumed", population_id, st.round.number);
  }
}

void PopulationControl::pause(const std::string& population_id) { set_paused(population_id, true); }

void PopulationControl::resume(const std::string& population_id) {
  set_paused(population_id, false);
}

void PopulationControl::finish(const std::string& population_id, const std::string& reason) {
  const std::string recorded = reason.empty() ? "finished by an operator" : reason;
  // A background close of the round in flight holds its aggregator: let it end first.
  rounds_.wait_for_close_past(population_id, std::numeric_limits<int>::max());
  std::lock_guard lock(parts_.mutex);
  for (int attempt = 0;; ++attempt) {
    PopulationState& st = changeable(population_id, "finished");
    if (st.closing != 0) {
      throw Unavailable("population '" + population_id +
                        "' is closing a round: finish it again in a moment");
    }
    // A shared store: this server holds no lock on the round it is about to lock (see
    // RoundLifecycle's commit_before_close).
    if (parts_.store.shared()) {
      try {
        parts_.batch.commit(false);
      } catch (const std::exception& e) {
        throw Unavailable(std::string("commit before a finish: store failure: ") + e.what());
      }
    }
    const double now = parts_.clock.now();
    std::optional<RoundCloseWrite> close;
    try {
      parts_.batch.step(
          "finish population",
          [&] {
            std::optional<RoundRecord> open =
                parts_.store.lock_open_round(population_id, st.round.number);
            if (!open) return;  // closed by another server meanwhile
            close.emplace();
            close->closed = *open;
            close->closed.status = RoundStatus::kClosed;
            close->closed.closed_at = now;
            close->population = st.record;
            close->population.state = RunState::kFinished;
            parts_.store.close_round(*close);
            parts_.store.set_finish_reason(population_id, recorded);
          },
          Durability::kFull);
    } catch (...) {
      parts_.populations.erase(population_id);
      throw;
    }
    if (!close) {
      // Another server closed the round: read what it left and decide again.
      parts_.populations.reload(st);
      if (attempt < 3) continue;
      throw Unavailable("population '" + population_id +
                        "': its round kept closing under this finish; try again");
    }
    st.round = close->closed;
    st.record = close->population;
    st.record.paused = false;
    st.record.finish_reason = recorded;
    st.aggregator.reset();
    parts_.waiters.notify(population_id);
    if (parts_.options.logger) {
      parts_.options.logger->info("event=population_finished population={} round={} reason={}",
                                  population_id, st.round.number, core::in_quotes(recorded));
    }
    return;
  }
}

}  // namespace fedleaf::server
