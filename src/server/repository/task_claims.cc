#include "server/repository/task_claims.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "server/repository/round_rules.h"
#include "server/util/server_errors.h"
#include "server/util/sha256.h"
#include "server/util/tokens.h"

namespace fedleaf::server {

TaskClaims::TaskClaims(RepositoryParts& parts, RoundLifecycle& rounds)
    : parts_(parts), rounds_(rounds) {}

namespace {

// A pool of tasks a claim leases from: its kind, its limit in the round, and how many the round
// has created (as this server last read it).
struct Pool {
  TaskKind kind;
  int limit;
  int created;
};

}  // namespace

std::optional<TaskAssignment> TaskClaims::lease(PopulationState& st, TaskKind kind, int limit,
                                                const std::string& client_key, double now,
                                                const DeviceRecord* device,
                                                const DeviceLimits* limits) {
  const std::string& population_id = st.record.id;
  TaskAssignment task;
  task.population = population_id;
  task.round = st.round.number;
  task.kind = kind;
  task.lease_token = generate_token();
  task.lease_expires_at = now + st.record.settings.lease_s;
  std::optional<ClaimedTask> claimed;
  const bool counted = device != nullptr && kind == TaskKind::kTrain;
  std::optional<DeviceRecord> locked;  // the device as the step read it, under its lock
  parts_.population_step(population_id, "claim", [&] {
    if (counted) {
      // Checked and recorded under the device row's lock, in the transaction that leases: two
      // servers never both admit one device past its limits. A store this server owns changes
      // only under the repository's lock, held since admit_device read the device.
      locked = parts_.store.shared()
                   ? parts_.store.find_device(population_id, device->credential_hash, true)
                   : std::optional<DeviceRecord>(*device);
      if (!locked || locked->revoked_at != 0 ||
          participation_refusal(*locked, task.round, *limits)) {
        return;
      }
    }
    // The client key is the presented token's hash: the store checks it is still live (a token
    // revoked on another server sharing the store leases nothing).
    claimed =
        parts_.store.claim_task({population_id, task.round, kind, limit, now, task.lease_expires_at,
                                 hash_token(task.lease_token), client_key,
                                 st.record.settings.max_tasks_per_client, client_key});
    if (claimed && counted)
      parts_.store.record_participation(population_id, locked->id, task.round);
  });
  if (counted && !claimed && locked) {
    // A refusal found only under the lock (another server's claim got there first): the rule's
    // error, as admit_device answers.
    if (locked->revoked_at != 0) throw Forbidden("this device's credential is revoked");
    if (auto refusal = participation_refusal(*locked, task.round, *limits)) {
      throw_refusal(*refusal, st, now);
    }
  }
  if (!claimed) return std::nullopt;
  if (!parts_.store.shared()) {  // the task counters claim_task advanced (a shared store's are
                                 // re-read by the next request anyway)
    std::optional<RoundRecord> round = parts_.store.find_round(population_id, task.round);
    if (round) st.round = *round;
  }
  task.task_id = claimed->task_id;
  task.plan_json = kind == TaskKind::kTrain ? st.train_plan_json : st.eval_plan_json;
  task.model_etag = st.model.etag;
  parts_.metrics.count_claim("task");
  return task;
}

std::optional<TaskAssignment> TaskClaims::lease_from_loaded_round(
    const std::string& population_id, const std::string& token_hash, int min_round, double now,
    const std::string& device_credential) {
  // Only where the round as last read still creates tasks of every pool, and nothing would
  // close it: a claim that leases nothing here (the round filled or closed meanwhile) re-reads
  // and claims as usual. Counters read earlier are never above the store's, so a pool this
  // read finds used up is, and the claim's statement leases only from an open round, in which
  // case it is the population's current one and its model the loaded one.
  PopulationState* st = parts_.populations.loaded(population_id);
  // A private population's train claim too: its device is read only once, locked, in the step
  // that leases (an unknown credential leases nothing here, and the full claim names why). Not
  // with evaluate tasks, which the full claim hands out to admitted devices only.
  const bool is_private = st != nullptr && st->device_limits.has_value();
  if (st == nullptr ||
      (is_private && (device_credential.empty() || st->record.settings.eval_tasks_per_round > 0)) ||
      !holds_client_token(*st, token_hash) || st->record.state != RunState::kRunning ||
      st->record.paused || st->buffered || st->closing != 0 ||
      st->round.status != RoundStatus::kOpen || st->round.number < min_round ||
      st->round.number >= st->record.settings.rounds ||
      next_round_step(st->record, st->round, now) != RoundStep::kStay) {
    return std::nullopt;
  }
  const PopulationSettings& settings = st->record.settings;
  std::vector<Pool> pools;
  if (settings.eval_tasks_per_round > 0) {
    pools.push_back({TaskKind::kEvaluate, settings.eval_tasks_per_round, st->round.eval_tasks});
  }
  pools.push_back({TaskKind::kTrain, settings.train_tasks_per_round, st->round.train_tasks});
  for (const Pool& pool : pools) {
    if (pool.created >= pool.limit) return std::nullopt;
  }
  DeviceRecord device;
  if (is_private) device.credential_hash = sha256_hex(device_credential);
  for (const Pool& pool : pools) {
    if (std::optional<TaskAssignment> task =
            lease(*st, pool.kind, pool.limit, token_hash, now, is_private ? &device : nullptr,
                  is_private ? &*st->device_limits : nullptr)) {
      return task;
    }
  }
  return std::nullopt;
}

void TaskClaims::check_client_bound(const PopulationState& st, const std::string& client_key,
                                    double now) {
  const int bound = st.record.settings.max_tasks_per_client;
  if (bound == 0) return;
  const ClientTasks held = parts_.store.count_client_tasks(st.record.id, client_key, now);
  if (held.held < bound) return;
  // A report or a given-back lease frees a task sooner; an expiry frees one at the latest.
  const double retry_s = held.next_expiry ? *held.next_expiry - now : st.record.settings.lease_s;
  throw TooManyRequests("population '" + st.record.id + "': this client holds " +
                            std::to_string(held.held) + " tasks, its max_tasks_per_client (" +
                            std::to_string(bound) +
                            "): report or give one back before claiming another",
                        std::max(1.0, retry_s));
}

ClaimOutcome TaskClaims::claim(const std::string& population_id, const std::string& client_token,
                               int min_round, const std::string& device_credential) {
  const std::string presented_hash = hash_token(client_token);  // outside the lock
  std::lock_guard lock(parts_.mutex);
  // A server sharing its store leases from the round it has loaded, without re-reading it first
  // (one statement per claim instead of two).
  if (parts_.store.shared()) {
    if (std::optional<TaskAssignment> task = lease_from_loaded_round(
            population_id, presented_hash, min_round, parts_.clock.now(), device_credential)) {
      return *task;
    }
  }
  PopulationState& st = parts_.populations.state_of(population_id);
  if (!holds_client_token(st, presented_hash)) {
    throw Forbidden("client token does not match a live token of population '" + population_id +
                    "'");
  }
  const double now = parts_.clock.now();
  rounds_.advance(st, now);
  if (st.record.state == RunState::kFinished) {
    parts_.metrics.count_claim("finished");
    return retry_hint(st.record, st.round, now, std::nullopt);
  }
  if (st.record.paused) {
    parts_.metrics.count_claim("paused");
    return retry_hint(st.record, st.round, now, std::nullopt);
  }
  // A private population admits enrolled devices only, each within its limits. A device over a
  // limit may still take evaluate tasks (they release nothing private): its refusal is answered
  // when the train pool is reached, or when nothing was leased.
  const std::optional<DeviceLimits>& limits = st.device_limits;
  std::optional<DeviceRecord> device;
  std::optional<ParticipationRefusal> refusal;
  if (limits) {
    device = admit_device(st, device_credential);
    refusal = participation_refusal(*device, std::max(st.round.number, min_round), *limits);
  }

  // Evaluate tasks first: there are few of them and they measure the model just published.
  std::vector<Pool> pools;
  if (st.record.settings.eval_tasks_per_round > 0) {
    pools.push_back(
        {TaskKind::kEvaluate, st.record.settings.eval_tasks_per_round, st.round.eval_tasks});
  }
  const bool wants_later_round = st.round.number < min_round;
  // A round being closed takes no more reports: its train tasks wait for the next round.
  if (st.round.number < st.record.settings.rounds && !wants_later_round && st.closing == 0) {
    if (!st.buffered) {
      pools.push_back(
          {TaskKind::kTrain, st.record.settings.train_tasks_per_round, st.round.train_tasks});
    } else if (parts_.store.count_out_tasks(population_id, TaskKind::kTrain, now) <
               static_cast<std::int64_t>(st.buffered->concurrency)) {
      // Buffered: a train task whenever fewer than `concurrency` are out, on any version (a
      // version creates as many as its buffer needs). On a shared store two servers may both
      // see one slot free and hand out one task each: concurrency is a target, not a bound.
      pools.push_back({TaskKind::kTrain, st.round.train_tasks + 1, st.round.train_tasks});
    }
  }
  std::optional<bool> any_leasable;  // read once, only when a pool is used up
  for (const Pool& pool : pools) {
    if (refusal && pool.kind == TaskKind::kTrain) break;
    if (pool.created >= pool.limit) {
      if (!any_leasable) {
        any_leasable = parts_.store.has_leasable_task(population_id, st.round.number, now);
      }
      if (!*any_leasable) continue;
    }
    if (std::optional<TaskAssignment> task =
            lease(st, pool.kind, pool.limit, presented_hash, now, device ? &*device : nullptr,
                  limits ? &*limits : nullptr)) {
      return *task;
    }
  }
  // A refusal answers only a claim that could have taken a train task now: one waiting for a
  // later round, for a round being closed or after the last training round is told to retry
  // (or that the population finished), and meets its limits when a train task is there.
  const bool train_pool_open = std::any_of(
      pools.begin(), pools.end(), [](const Pool& pool) { return pool.kind == TaskKind::kTrain; });
  if (refusal && train_pool_open) throw_refusal(*refusal, st, now);
  // Nothing leased: a client at its bound (the store's claim counted it, across servers) is told
  // so; any other gets the usual hint.
  check_client_bound(st, presented_hash, now);

  parts_.metrics.count_claim("retry");
  RetryLater retry =
      retry_hint(st.record, st.round, now,
                 parts_.store.next_lease_expiry(population_id, st.round.number, now));
  retry.wake_epoch = parts_.waiters.epoch(population_id);
  return retry;
}

void TaskClaims::release_lease(std::int64_t task_id, const std::string& lease_token) {
  const std::string presented_hash = hash_token(lease_token);
  std::lock_guard lock(parts_.mutex);
  std::optional<TaskWithLeases> found = parts_.store.find_task_with_leases(task_id);
  if (!found || found->task.state != TaskState::kLeased) return;
  const TaskRecord* task = &found->task;
  std::int64_t lease_id = 0;
  for (const LeaseRecord& lease : found->leases) {
    if (constant_time_equals(presented_hash, lease.token_hash)) lease_id = lease.id;
  }
  const double now = parts_.clock.now();
  if (lease_id == 0 || lease_id != task->lease_id || now >= task->lease_expires_at) return;
  parts_.population_step(task->population_id, "release lease",
                         [&] { parts_.store.release_lease(task_id, lease_id, now); });
  parts_.metrics.count_claim("undelivered");
  parts_.waiters.notify(task->population_id);
}

}  // namespace fedleaf::server
