#include "server/repository/population_cache.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <utility>

#include "server/util/server_errors.h"

namespace fedleaf::server {

namespace {

Unavailable quarantined_error(const std::string& population_id, const std::string& reason) {
  return Unavailable("population '" + population_id +
                     "' failed to load and is quarantined: " + reason);
}

}  // namespace

PopulationCache::PopulationCache(Store& store, const Clock& clock, ClaimWaiters& waiters,
                                 std::shared_ptr<spdlog::logger> logger)
    : store_(store), clock_(clock), waiters_(waiters), logger_(std::move(logger)) {}

void PopulationCache::load_all() {
  for (const PopulationRecord& record : store_.list_populations()) {
    try {
      states_.emplace(record.id, load_population_state_consistently(store_, record));
    } catch (const std::exception& e) {
      quarantine(record.id, e.what());
    }
  }
}

void PopulationCache::quarantine(const std::string& population_id, const std::string& reason) {
  quarantined_[population_id] = {reason, clock_.now() + kQuarantineRecheckS};
  if (logger_) {
    logger_->error("event=population_quarantined population={} reason=\"{}\"", population_id,
                   reason);
  }
}

PopulationState& PopulationCache::state_of(const std::string& population_id) {
  auto it = states_.find(population_id);
  if (it != states_.end()) {
    if (store_.shared()) refresh(*it->second);
    return *it->second;
  }
  if (quarantine_holds(population_id)) {
    throw quarantined_error(population_id, quarantined_.at(population_id).reason);
  }
  auto record = store_.find_population(population_id);
  if (!record) throw NotFound("population '" + population_id + "' does not exist");
  std::unique_ptr<PopulationState> loaded;
  try {
    loaded = load_population_state_consistently(store_, *record);
  } catch (const std::exception& e) {
    quarantine(population_id, e.what());
    throw quarantined_error(population_id, e.what());
  }
  if (quarantined_.erase(population_id) > 0 && logger_) {
    logger_->info("event=population_restored population={}", population_id);
  }
  return *states_.emplace(population_id, std::move(loaded)).first->second;
}

PopulationState* PopulationCache::loaded(const std::string& population_id) {
  auto it = states_.find(population_id);
  return it == states_.end() ? nullptr : it->second.get();
}

void PopulationCache::add(std::unique_ptr<PopulationState> state) {
  const std::string id = state->record.id;
  states_[id] = std::move(state);
}

void PopulationCache::erase(const std::string& population_id) { states_.erase(population_id); }

void PopulationCache::clear() { states_.clear(); }

std::vector<std::string> PopulationCache::loaded_ids() const {
  std::vector<std::string> ids;
  for (const auto& entry : states_) ids.push_back(entry.first);
  return ids;
}

bool PopulationCache::quarantine_holds(const std::string& population_id) const {
  auto failed = quarantined_.find(population_id);
  if (failed == quarantined_.end()) return false;
  // A shared store may hold what another server wrote since (or what a load caught mid-commit
  // more often than load_population_state_consistently reads again): loaded again when due. A
  // store this server owns changes only through it: the quarantine lasts until a restart.
  return !store_.shared() || clock_.now() < failed->second.recheck_at;
}

const std::string* PopulationCache::quarantine_reason(const std::string& population_id) const {
  auto failed = quarantined_.find(population_id);
  return failed == quarantined_.end() ? nullptr : &failed->second.reason;
}

void PopulationCache::refresh(PopulationState& st) {
  // One read (one statement on PostgreSQL) on every request: whether the population moved on,
  // and our round's counters.
  std::optional<PopulationProgress> progress = store_.find_progress(st.record.id, st.round.number);
  if (!progress) throw NotFound("population '" + st.record.id + "' does not exist");
  if (progress->current_round == st.record.current_round && progress->state == st.record.state) {
    if (!progress->round) throw Error("round " + std::to_string(st.round.number) + " is missing");
    st.round = std::move(*progress->round);
    // Paused or resumed by another server: a resume wakes the claims parked here.
    if (st.record.paused && !progress->paused) waiters_.notify(st.record.id);
    st.record.paused = progress->paused;
    // A client token issued or revoked (on any server): the live tokens read again.
    if (progress->tokens_epoch != st.record.tokens_epoch) load_client_tokens(store_, st);
    return;
  }
  // Another server closed the round: its model and aggregate replace ours, and the claims
  // parked here learn of the new round (the tick re-checks every --tick-interval-s).
  reload(st);
  waiters_.notify(st.record.id);
}

void PopulationCache::reload(PopulationState& st) {
  std::optional<PopulationRecord> record = store_.find_population(st.record.id);
  if (!record) throw NotFound("population '" + st.record.id + "' does not exist");
  st = std::move(*load_population_state_consistently(store_, *record));
}

}  // namespace fedleaf::server
