// PopulationCache: the in-memory state of the populations a repository serves — loaded on first
// use (a shared store's re-read on every use) — and the quarantine of those that failed to load.
//
//   PopulationCache cache(store, clock, waiters, logger);
//   cache.load_all();                                 // at start: every stored population
//   PopulationState& st = cache.state_of("spam");     // NotFound, or Unavailable: quarantined
//
// A population that cannot be loaded (e.g. its stored model or checkpoint is invalid) is
// quarantined: its calls answer 503 with the reason, its status says state "failed", the others
// serve on. On a store this server owns the quarantine lasts until a restart; on a shared store
// the next call (or tick) kQuarantineRecheckS after the failed load loads it again.
//
// Not thread-safe: guarded by the repository's mutex (RepositoryParts).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/repository/claim_waiters.h"
#include "server/repository/population_state.h"
#include "server/store/store.h"
#include "server/util/clock.h"

namespace spdlog {
class logger;
}

namespace fedleaf::server {

class PopulationCache {
 public:
  // A shared store: how long after a failed load a quarantined population is loaded again.
  static constexpr double kQuarantineRecheckS = 10;

  // The store, clock and waiters must outlive the cache; null logger: no logging.
  PopulationCache(Store& store, const Clock& clock, ClaimWaiters& waiters,
                  std::shared_ptr<spdlog::logger> logger);

  // Loads every stored population, quarantining those that fail.
  void load_all();
  // The population's state, loaded on first use; on a shared store re-read (refresh). Throws
  // NotFound for an unknown id and Unavailable for a quarantined one.
  PopulationState& state_of(const std::string& population_id);
  // The loaded state, or null (nothing is loaded or re-read).
  PopulationState* loaded(const std::string& population_id);
  void add(std::unique_ptr<PopulationState> state);
  void erase(const std::string& population_id);
  void clear();
  std::vector<std::string> loaded_ids() const;
  std::map<std::string, std::unique_ptr<PopulationState>>& all() { return states_; }

  // Whether a population's calls answer "quarantined" now.
  bool quarantine_holds(const std::string& population_id) const;
  // Why the population failed to load, or null when it is not quarantined.
  const std::string* quarantine_reason(const std::string& population_id) const;
  // Reads the state again from the store (another server closed its round).
  void reload(PopulationState& state);

 private:
  void quarantine(const std::string& population_id, const std::string& reason);
  // A shared store: re-reads the round's counters, or the whole state when another server
  // closed the round (then the claims parked here are woken).
  void refresh(PopulationState& state);

  Store& store_;
  const Clock& clock_;
  ClaimWaiters& waiters_;
  std::shared_ptr<spdlog::logger> logger_;
  std::map<std::string, std::unique_ptr<PopulationState>> states_;
  struct Quarantine {
    std::string reason;  // why it failed to load
    double recheck_at = 0;
  };
  std::map<std::string, Quarantine> quarantined_;  // by population id
};

}  // namespace fedleaf::server
