// What Store::claim_task is asked and answers, and what a client key holds
// (Store::count_client_tasks): the records of a claim, apart from the store's interface.
//
//   std::optional<ClaimedTask> c = store.claim_task({"spam", 0, TaskKind::kTrain, 5, now,
//                                                    now + 120, lease_token_hash});
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/store/store_kinds.h"

namespace fedleaf::server {

// claim_task: lease one task of an open round.
struct ClaimRequest {
  std::string population_id;
  int round = 0;
  TaskKind kind = TaskKind::kTrain;
  int limit = 0;  // tasks of this kind the round may create (train_tasks / eval_tasks)
  double now = 0;
  double lease_expires_at = 0;
  std::string lease_token_hash;
  // Who claims (the hash of the client token presented; a device identity once leaves have one),
  // kept with the lease under a bound. With max_client_tasks > 0 a claim leases nothing while that
  // key holds max_client_tasks tasks of the population (leased, the lease valid at now), decided
  // atomically with every other connection's claim for the same key (a PostgreSQL advisory lock on
  // the key until the transaction ends). 0: no bound.
  std::string client_key = {};
  int max_client_tasks = 0;
  // The hash of the client token the claim presents: when set, nothing is leased unless it is a
  // live token of the population (one revoked on another server's connection included).
  std::string client_token_hash = {};
};

// count_client_tasks: a client key's tasks of a population out now, and the earliest expiry of
// their leases (nullopt when none is out).
struct ClientTasks {
  std::int64_t held = 0;
  std::optional<double> next_expiry;
};

struct ClaimedTask {
  std::int64_t task_id = 0;
  std::int64_t lease_id = 0;
};

}  // namespace fedleaf::server
