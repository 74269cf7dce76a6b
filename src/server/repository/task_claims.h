// TaskClaims: how leaves get tasks — a claim leases an evaluate task first (few, and they
// measure the model just published), then a train task of the open round (created on demand, at
// most train_tasks_per_round), or answers when to retry; a lease whose answer could not be
// delivered is given back. A population with max_tasks_per_client answers a client holding that
// many tasks with 429 (the store's claim enforces the bound, across servers). A private
// population's claim names its device (Fedleaf-Device): evaluate tasks go to any live device
// without counting; a train task only within the device's participation limits, checked and
// recorded in the step that leases it (device_limits.h).
//
//   ClaimOutcome c = claims.claim(p.id, p.client_token, min_round);
//
// Both calls take the repository's mutex and leave their step in the open batch (see "Crash
// safety" in task_repository.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/repository/device_limits.h"
#include "server/repository/repository_parts.h"
#include "server/repository/results.h"
#include "server/repository/round_lifecycle.h"

namespace fedleaf::server {

class TaskClaims {
 public:
  TaskClaims(RepositoryParts& parts, RoundLifecycle& rounds);

  // TaskRepository::claim.
  ClaimOutcome claim(const std::string& population_id, const std::string& client_token,
                     int min_round, const std::string& device_credential = {});
  // TaskRepository::release_lease.
  void release_lease(std::int64_t task_id, const std::string& lease_token);

 private:
  // Leases a task of `kind` from the round `st` holds to the client `client_key` (a step of the
  // open batch); nullopt when the store has none to lease, or the client holds its
  // max_tasks_per_client.
  // A private population's train lease checks `device` (locked in the store) against `limits`
  // and records its participation in the same step; a device over a limit leases nothing and
  // the rule's error is thrown after the step (device_admission.cc).
  std::optional<TaskAssignment> lease(PopulationState& st, TaskKind kind, int limit,
                                      const std::string& client_key, double now,
                                      const DeviceRecord* device = nullptr,
                                      const DeviceLimits* limits = nullptr);
  // A private population's claim: the live device of `credential` (DeviceRequired without one,
  // Forbidden for an unknown or revoked one). device_admission.cc.
  DeviceRecord admit_device(const PopulationState& st, const std::string& credential);
  // The error of a refusal: ParticipationsUsed, or DeviceTooSoon with its retry round and, as
  // Retry-After, the time to the current round's deadline (a round may close sooner: the leaf
  // asks again then and is told again).
  [[noreturn]] static void throw_refusal(const ParticipationRefusal& refusal,
                                         const PopulationState& st, double now);
  // TooManyRequests naming the rule when the client `client_key` holds the population's
  // max_tasks_per_client tasks (Retry-After: when the first of their leases expires).
  void check_client_bound(const PopulationState& st, const std::string& client_key, double now);
  // A shared store's fast path: a task of the loaded round without re-reading the population
  // first; nullopt when the loaded state does not allow it or nothing was leased. A private
  // population's device, by `device_credential`, is checked and recorded as lease() does.
  std::optional<TaskAssignment> lease_from_loaded_round(const std::string& population_id,
                                                        const std::string& token_hash,
                                                        int min_round, double now,
                                                        const std::string& device_credential);

  RepositoryParts& parts_;
  RoundLifecycle& rounds_;
};

}  // namespace fedleaf::server
