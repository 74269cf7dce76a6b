// TaskClaims: how leaves get tasks — a claim leases an evaluate task first (few, and they
// measure the model just published), then a train task of the open round (created on demand, at
// most train_tasks_per_round), or answers when to retry; a lease whose answer could not be
// delivered is given back. A population with max_tasks_per_client answers a client holding that
// many tasks with 429 (the store's claim enforces the bound, across servers).
//
//   ClaimOutcome c = claims.claim(p.id, p.client_token, min_round);
//
// Both calls take the repository's mutex and leave their step in the open batch (see "Crash
// safety" in task_repository.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/repository/repository_parts.h"
#include "server/repository/results.h"
#include "server/repository/round_lifecycle.h"

namespace fedleaf::server {

class TaskClaims {
 public:
  TaskClaims(RepositoryParts& parts, RoundLifecycle& rounds);

  // TaskRepository::claim.
  ClaimOutcome claim(const std::string& population_id, const std::string& client_token,
                     int min_round);
  // TaskRepository::release_lease.
  void release_lease(std::int64_t task_id, const std::string& lease_token);

 private:
  // Leases a task of `kind` from the round `st` holds to the client `client_key` (a step of the
  // open batch); nullopt when the store has none to lease, or the client holds its
  // max_tasks_per_client.
  std::optional<TaskAssignment> lease(PopulationState& st, TaskKind kind, int limit,
                                      const std::string& client_key, double now);
  // TooManyRequests naming the rule when the client `client_key` holds the population's
  // max_tasks_per_client tasks (Retry-After: when the first of their leases expires).
  void check_client_bound(const PopulationState& st, const std::string& client_key, double now);
  // A shared store's fast path: a task of the loaded round without re-reading the population
  // first; nullopt when the loaded state does not allow it or nothing was leased.
  std::optional<TaskAssignment> lease_from_loaded_round(const std::string& population_id,
                                                        const std::string& token_hash,
                                                        int min_round, double now);

  RepositoryParts& parts_;
  RoundLifecycle& rounds_;
};

}  // namespace fedleaf::server
