// RepositoryParts: what the roles of a TaskRepository share — the store, clock, metrics and
// options, the one mutex, the loaded populations, the open batch of the group commit and the
// parked claims. TaskRepository owns it; RoundLifecycle, TaskClaims and UploadIntake each hold
// a reference.
//
//   std::lock_guard lock(parts.mutex);
//   PopulationState& st = parts.populations.state_of(id);
//   parts.population_step(id, "claim", [&] { parts.store.claim_task(...); });
//
// Locking: every member but the mutex itself is guarded by `mutex` (the store has a single
// writer anyway); a role's methods expect it held unless their comment says they take it.
#pragma once

#include <mutex>
#include <string>
#include <utility>

#include "server/repository/claim_waiters.h"
#include "server/repository/population_cache.h"
#include "server/repository/store_batch.h"
#include "server/repository/task_repository_options.h"
#include "server/store/store.h"
#include "server/util/clock.h"
#include "server/util/server_metrics.h"

namespace fedleaf::server {

struct RepositoryParts {
  // The store, clock and metrics must outlive the parts.
  RepositoryParts(Store& store_in, const Clock& clock_in, ServerMetrics& metrics_in,
                  TaskRepositoryOptions options_in)
      : store(store_in),
        clock(clock_in),
        metrics(metrics_in),
        options(std::move(options_in)),
        populations(store_in, clock_in, waiters, options.logger),
        // The in-memory state holds steps the store no longer has: reload on next use.
        batch(store_in, [this] { populations.clear(); }) {}
  RepositoryParts(const RepositoryParts&) = delete;
  RepositoryParts& operator=(const RepositoryParts&) = delete;

  // A step of the open batch that changes a loaded population: on failure its in-memory state
  // (which may already hold the change) is dropped, to be reloaded from the store.
  template <class Body>
  void population_step(const std::string& population_id, const std::string& what, Body&& body) {
    try {
      batch.step(what, std::forward<Body>(body));
    } catch (...) {
      populations.erase(population_id);
      throw;
    }
  }

  Store& store;
  const Clock& clock;
  ServerMetrics& metrics;
  const TaskRepositoryOptions options;
  std::mutex mutex;
  ClaimWaiters waiters;  // before populations, which notify it
  PopulationCache populations;
  StoreBatch batch;  // after populations: its abandon handler clears them
};

}  // namespace fedleaf::server
