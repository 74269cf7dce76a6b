// TaskClaims: how leaves get tasks — a claim leases an evaluate task first (few, and they
// measure the model just published), then a train task of the open round (created on demand, at
// most train_tasks_per_round), or answers when to retry; a lease whose answer could not be
// delivered is given back.
//
//   ClaimOutcome c = claims.claim(p.id, p.client_token, min_round);
//
// Both calls take the repository's mutex and leave their step in the open batch (see "Crash
// safety" in task_repository.h).
#pragma once

#include <cstdint>
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
  RepositoryParts& parts_;
  RoundLifecycle& rounds_;
};

}  // namespace fedleaf::server
