#include "server/repository/task_repository.h"

#include "server/repository/new_population.h"
#include "server/repository/population_state.h"
#include "server/repository/round_close.h"
#include "server/repository/upload_receipt.h"
#include "server/repository/upload_refusal.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/aggregation/round_aggregator.h"
#include "core/train/plan.h"
#include "core/wire/result_format.h"
#include "core/wire/safetensors.h"
#include "core/wire/text_format.h"
#include "server/store/store_rules.h"
#include "server/util/server_errors.h"
#include "server/util/sha256.h"
#include "server/util/tokens.h"

namespace fedleaf::server {

using nlohmann::json;

TaskRepository::TaskRepository(Store& store, const Clock& clock, ServerMetrics& metrics,
                               TaskRepositoryOptions options)
    : store_(store),
      clock_(clock),
      metrics_(metrics),
      options_(std::move(options)),
      // The in-memory state holds steps the store no longer has: reload on next use.
      batch_(store, [this] { populations_.clear(); }) {
  if (options_.close_in_background && !store_.shared()) closer_ = std::make_unique<RoundCloser>();
  for (const PopulationRecord& record : store_.list_populations()) {
    try {
      populations_.emplace(record.id, load_population_state_consistently(store_, record));
    } catch (const std::exception& e) {
      quarantine(record.id, e.what());
    }
  }
}

namespace {

Unavailable quarantined_error(const std::string& population_id, const std::string& reason) {
  return Unavailable("population '" + population_id +
                     "' failed to load and is quarantined: " + reason);
}

}  // namespace

void TaskRepository::quarantine(const std::string& population_id, const std::string& reason) {
  quarantined_[population_id] = {reason, clock_.now() + kQuarantineRecheckS};
  if (options_.logger) {
    options_.logger->error("event=population_quarantined population={} reason=\"{}\"",
                           population_id, reason);
  }
}

TaskRepository::~TaskRepository() {
  closer_.reset();  // runs the closes in flight, which take the mutex
  std::lock_guard lock(mutex_);
  try {
    batch_.commit(false);
  } catch (const std::exception& e) {
    // Nothing of the open batch was answered (answers wait for its commit): losing it is safe.
    if (options_.logger) {
      options_.logger->error("event=final_commit_failed error=\"{}\"", e.what());
    }
  }
}

void TaskRepository::commit_batch() {
  std::lock_guard lock(mutex_);
  batch_.commit(false);
}

PopulationState& TaskRepository::state_of(const std::string& population_id) {
  auto it = populations_.find(population_id);
  if (it != populations_.end()) {
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
  if (quarantined_.erase(population_id) > 0 && options_.logger) {
    options_.logger->info("event=population_restored population={}", population_id);
  }
  return *populations_.emplace(population_id, std::move(loaded)).first->second;
}

bool TaskRepository::quarantine_holds(const std::string& population_id) const {
  auto failed = quarantined_.find(population_id);
  if (failed == quarantined_.end()) return false;
  // A shared store may hold what another server wrote since (or what a load caught mid-commit
  // more often than load_population_state_consistently reads again): loaded again when due. A
  // store this server owns changes only through it: the quarantine lasts until a restart.
  return !store_.shared() || clock_.now() < failed->second.recheck_at;
}

void TaskRepository::refresh(PopulationState& st) {
  std::optional<PopulationRecord> record = store_.find_population(st.record.id);
  if (!record) throw NotFound("population '" + st.record.id + "' does not exist");
  if (record->current_round == st.record.current_round && record->state == st.record.state) {
    std::optional<RoundRecord> round = store_.find_round(st.record.id, st.round.number);
    if (!round) throw Error("round " + std::to_string(st.round.number) + " is missing");
    st.round = *round;
    return;
  }
  // Another server closed the round: its model and aggregate replace ours, and the claims
  // parked here learn of the new round (the tick re-checks every --tick-interval-s).
  st = std::move(*load_population_state_consistently(store_, *record));
  waiters_.notify(st.record.id);
}

CreatedPopulation TaskRepository::create_population(const PopulationSpec& spec) {
  // The model is made and checked before the lock: a large one takes seconds and gigabytes, and
  // one over max_model_bytes is refused before it is allocated.
  const auto over_limit = [&](std::uint64_t bytes, const std::string& what) {
    return InvalidInput("population: " + what + " " + std::to_string(bytes) +
                        " bytes, more than this server's --max-model-bytes (" +
                        std::to_string(options_.max_model_bytes) + ")");
  };
  std::string model_bytes;
  if (spec.initial_model) {
    model_bytes = widen_half_floats(*spec.initial_model);
    if (model_bytes.size() > options_.max_model_bytes) {
      throw over_limit(model_bytes.size(), "initial_model_b64 holds (with F16 read as F32)");
    }
  } else {
    if (!options_.model_initializer) {
      throw InvalidInput(
          "population: 'seed' is not supported by this server; send "
          "'initial_model_b64'");
    }
    const std::uint64_t declared =
        core::parameter_bytes(core::parse_plan(plan_with_kind(spec.plan_json, "train")).model);
    if (declared > options_.max_model_bytes) {
      throw over_limit(declared, "the plan's model declares parameters of");
    }
    model_bytes = to_string_bytes(options_.model_initializer(spec.plan_json, *spec.seed));
  }
  NewPopulation made = make_new_population(spec, std::move(model_bytes), clock_.now());
  std::lock_guard lock(mutex_);
  const PopulationRecord& record = made.record;
  CreatedPopulation created{record.id, made.client_token, made.model_etag};
  batch_.step(
      "create population",
      [&] {
        if (populations_.count(record.id) || store_.find_population(record.id)) {
          throw Conflict("population '" + record.id + "' already exists");
        }
        store_.create_population(record, made.round0,
                                 {record.id, 0, made.model_etag, made.model_bytes});
      },
      Durability::kFull);
  populations_[record.id] =
      new_population_state(record, made.round0, made.model_etag, std::move(made.model_bytes),
                           std::move(made.update_plan), std::move(made.aggregator));
  if (options_.logger) {
    options_.logger->info("event=population_created population={} rounds={} clients_per_round={}",
                          record.id, record.settings.rounds, record.settings.clients_per_round);
  }
  return created;
}

ClaimOutcome TaskRepository::claim(const std::string& population_id,
                                   const std::string& client_token, int min_round) {
  const std::string presented_hash = hash_token(client_token);  // outside the lock
  std::lock_guard lock(mutex_);
  PopulationState& st = state_of(population_id);
  if (!constant_time_equals(presented_hash, st.record.client_token_hash)) {
    throw Forbidden("client token does not match population '" + population_id + "'");
  }
  const double now = clock_.now();
  advance(st, now);
  if (st.record.state == RunState::kFinished) {
    metrics_.count_claim("finished");
    return retry_hint(st.record, st.round, now, std::nullopt);
  }

  // Evaluate tasks first: there are few of them and they measure the model just published.
  struct Pool {
    TaskKind kind;
    int limit;
    int created;
  };
  std::vector<Pool> pools;
  if (st.record.settings.eval_tasks_per_round > 0) {
    pools.push_back(
        {TaskKind::kEvaluate, st.record.settings.eval_tasks_per_round, st.round.eval_tasks});
  }
  const bool wants_later_round = st.round.number < min_round;
  // A round being closed takes no more reports: its train tasks wait for the next round.
  if (st.round.number < st.record.settings.rounds && !wants_later_round && st.closing == 0) {
    pools.push_back(
        {TaskKind::kTrain, st.record.settings.train_tasks_per_round, st.round.train_tasks});
  }
  std::optional<bool> any_leasable;  // read once, only when a pool is used up
  for (const Pool& pool : pools) {
    if (pool.created >= pool.limit) {
      if (!any_leasable) {
        any_leasable = store_.has_leasable_task(population_id, st.round.number, now);
      }
      if (!*any_leasable) continue;
    }
    TaskAssignment task;
    task.population = population_id;
    task.round = st.round.number;
    task.kind = pool.kind;
    task.lease_token = generate_token();
    task.lease_expires_at = now + st.record.settings.lease_s;
    std::optional<ClaimedTask> claimed;
    population_step(population_id, "claim", [&] {
      claimed = store_.claim_task({population_id, task.round, pool.kind, pool.limit, now,
                                   task.lease_expires_at, hash_token(task.lease_token)});
    });
    if (!claimed) continue;
    if (!store_.shared()) {  // the task counters claim_task advanced (a shared store's are
                             // re-read by the next request anyway)
      std::optional<RoundRecord> round = store_.find_round(population_id, task.round);
      if (round) st.round = *round;
    }
    task.task_id = claimed->task_id;
    task.plan_json = task.kind == TaskKind::kTrain ? st.train_plan_json : st.eval_plan_json;
    task.model_etag = st.model.etag;
    metrics_.count_claim("task");
    return task;
  }

  metrics_.count_claim("retry");
  RetryLater retry = retry_hint(st.record, st.round, now,
                                store_.next_lease_expiry(population_id, st.round.number, now));
  retry.wake_epoch = waiters_.epoch(population_id);
  return retry;
}

void TaskRepository::release_lease(std::int64_t task_id, const std::string& lease_token) {
  const std::string presented_hash = hash_token(lease_token);
  std::lock_guard lock(mutex_);
  std::optional<TaskRecord> task = store_.find_task(task_id);
  if (!task || task->state != TaskState::kLeased) return;
  std::int64_t lease_id = 0;
  for (const LeaseRecord& lease : store_.list_leases(task_id)) {
    if (constant_time_equals(presented_hash, lease.token_hash)) lease_id = lease.id;
  }
  const double now = clock_.now();
  if (lease_id == 0 || lease_id != task->lease_id || now >= task->lease_expires_at) return;
  population_step(task->population_id, "release lease",
                  [&] { store_.release_lease(task_id, lease_id, now); });
  metrics_.count_claim("undelivered");
  waiters_.notify(task->population_id);
}

void TaskRepository::reject(const RefusedUpload& upload) {
  bool counted = false;
  try {
    batch_.step("count rejection", [&] { counted = store_.add_rejection(upload); });
  } catch (const std::exception& e) {
    // The rejection itself stands; only its statistic is lost.
    if (options_.logger)
      options_.logger->warn("event=rejection_not_counted error=\"{}\"", e.what());
  }
  if (counted) metrics_.count_rejection(upload.reason);
}

UploadOutcome TaskRepository::upload(std::int64_t task_id, const std::string& lease_token,
                                     const std::string& body) {
  // Hashing needs no shared state: done before the lock, which every request waits for.
  const std::string presented_hash = hash_token(lease_token);
  const std::string sha = sha256_hex(body);
  std::lock_guard lock(mutex_);
  std::optional<TaskRecord> task = store_.find_task(task_id);
  if (!task) throw NotFound("task " + std::to_string(task_id) + " does not exist");
  const std::string population_id = task->population_id;
  PopulationState& st = state_of(population_id);

  std::int64_t lease_id = 0;  // every lease is compared, so timing does not reveal which matched
  for (const LeaseRecord& lease : store_.list_leases(task_id)) {
    if (constant_time_equals(presented_hash, lease.token_hash)) lease_id = lease.id;
  }
  if (lease_id == 0) {
    reject({population_id, "forbidden"});
    throw Forbidden("lease token does not match task " + std::to_string(task_id));
  }
  const double now = clock_.now();
  advance(st, now);
  if (task->state == TaskState::kDone || lease_id != task->lease_id ||
      now >= task->lease_expires_at) {
    // Answered from the row alone; accept_result decides the same way under its lock.
    AcceptRequest request;
    request.task_id = task_id;
    request.lease_id = lease_id;
    request.result_sha256 = sha;
    request.now = now;
    return answer_refused(population_id, classify_upload(*task, request), *task, lease_id, sha);
  }
  if (task->kind == TaskKind::kEvaluate)
    return accept_evaluate(st, *task, lease_id, body, sha, now);
  if (task->round != st.round.number || st.round.status != RoundStatus::kOpen || !st.aggregator) {
    return answer_refused(population_id, AcceptStatus::kRoundClosed, *task, lease_id, sha);
  }
  return accept_train(st, *task, lease_id, body, sha, now);
}

UploadOutcome TaskRepository::answer_refused(const std::string& population_id, AcceptStatus status,
                                             const TaskRecord& task, std::int64_t lease_id,
                                             const std::string& sha) {
  if (status == AcceptStatus::kRepeated) return {200, decode_receipt(task)};
  reject({population_id, refusal_reason(status), lease_id, sha});
  throw_refusal(status, task, population_id, clock_.now());
}

UploadOutcome TaskRepository::accept_train(PopulationState& st, const TaskRecord& task,
                                           std::int64_t lease_id, const std::string& body,
                                           const std::string& sha, double now) {
  const std::string id = st.record.id;
  const auto* data = reinterpret_cast<const std::uint8_t*>(body.data());
  core::ResultHeader summary;
  try {
    summary = core::read_result_header(data, body.size(), core::ResultKind::kTrain);
    if (!summary.task_id.empty() && summary.task_id != std::to_string(task.id)) {
      throw InvalidInput("result metadata 'task_id': " + core::in_quotes(summary.task_id) +
                         " is not the uploaded task " + std::to_string(task.id));
    }
    // All or nothing: on InvalidInput the aggregator is unchanged.
    const auto fold_start = std::chrono::steady_clock::now();
    st.aggregator->add_result(data, body.size());
    metrics_.observe_phase(
        "fold",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - fold_start).count());
  } catch (const InvalidInput&) {
    reject({id, "invalid_result", lease_id, sha});
    throw;
  }

  const auto examples = static_cast<double>(summary.num_examples);
  AcceptRequest request{task.id, lease_id, sha, now, body, {}, nullptr};
  request.delta.examples = examples;
  request.delta.loss_sum = examples * summary.metrics.at("loss");
  if (auto it = summary.metrics.find("accuracy"); it != summary.metrics.end()) {
    request.delta.accuracy_sum = examples * it->second;
    request.delta.accuracy_examples = examples;
  }
  request.delta.upload_bytes = static_cast<std::int64_t>(body.size());
  request.receipt_body = [&](int reports) {
    return encode_receipt({task.id, id, task.round, TaskKind::kTrain, reports, sha});
  };
  // A step of the open batch: committed and synced by GroupCommit before the answer is sent. On
  // failure the in-memory aggregator, which already holds this result, is reloaded.
  std::optional<AcceptOutcome> outcome;
  bool checkpointed = false;
  population_step(id, "accept result", [&] {
    outcome = store_.accept_result(request);
    if (outcome->status != AcceptStatus::kAccepted) return;
    // A shared store's seqs skip values (other servers' results, some not yet committed): its
    // rounds are rebuilt from the stored results at close, never checkpointed midway.
    const std::int64_t seq = outcome->seq;
    if (!store_.shared() && st.aggregator_in_seq_order && seq == st.result_seq + 1 &&
        options_.checkpoint_every > 0 && seq - st.checkpoint_seq >= options_.checkpoint_every) {
      store_.put_checkpoint({id, task.round, seq, to_string_bytes(st.aggregator->checkpoint())});
      checkpointed = true;
    }
  });
  if (outcome->status != AcceptStatus::kAccepted) {
    // Another server changed the task or closed the round after our read: the aggregator holds
    // a result the store does not.
    st.aggregator_in_seq_order = false;
    return answer_refused(id, outcome->status, outcome->task, lease_id, sha);
  }
  const std::int64_t seq = outcome->seq;
  if (!store_.shared() && seq != st.result_seq + 1) st.aggregator_in_seq_order = false;
  st.result_seq = seq;
  if (checkpointed) st.checkpoint_seq = seq;
  st.round = outcome->round;
  advance(st, now);
  return {201, decode_receipt(outcome->task)};
}

UploadOutcome TaskRepository::accept_evaluate(PopulationState& st, const TaskRecord& task,
                                              std::int64_t lease_id, const std::string& body,
                                              const std::string& sha, double now) {
  const std::string id = st.record.id;
  core::ResultHeader summary;
  try {
    summary = core::read_result_header(reinterpret_cast<const std::uint8_t*>(body.data()),
                                       body.size(), core::ResultKind::kEvaluate);
  } catch (const InvalidInput&) {
    reject({id, "invalid_result", lease_id, sha});
    throw;
  }
  const auto examples = static_cast<double>(summary.num_examples);
  AcceptRequest request{task.id, lease_id, sha, now, {}, {}, nullptr};
  request.delta.examples = examples;
  for (const auto& [name, value] : summary.metrics) {
    request.delta.eval_sums[name] = examples * value;
  }
  request.receipt_body = [&](int) {
    return encode_receipt({task.id, id, task.round, TaskKind::kEvaluate, std::nullopt, sha});
  };
  std::optional<AcceptOutcome> outcome;
  population_step(id, "accept evaluation", [&] { outcome = store_.accept_result(request); });
  if (outcome->status != AcceptStatus::kAccepted) {
    return answer_refused(id, outcome->status, outcome->task, lease_id, sha);
  }
  if (task.round == st.round.number) st.round = outcome->round;
  advance(st, now);
  return {201, decode_receipt(outcome->task)};
}

// An earlier round's model is read and hashed after the lock is released (PublishedModel).
ModelBlob TaskRepository::model(const std::string& population_id, int round) {
  wait_for_close_past(population_id, round);
  PublishedModel found;
  {
    std::lock_guard lock(mutex_);
    PopulationState& st = state_of(population_id);
    advance(st, clock_.now());
    found = find_published_model(store_, st, round);
  }
  return found.load();
}

SelectableModel TaskRepository::selectable_model(const std::string& population_id,
                                                 const std::string& client_token, int round) {
  const std::string presented_hash = hash_token(client_token);  // outside the lock
  wait_for_close_past(population_id, round);
  PublishedModel found;
  SelectableModel out;
  {
    std::lock_guard lock(mutex_);
    PopulationState& st = state_of(population_id);
    if (!constant_time_equals(presented_hash, st.record.client_token_hash)) {
      throw Forbidden("client token does not match population '" + population_id + "'");
    }
    advance(st, clock_.now());
    found = find_published_model(store_, st, round);
    if (found.current()) out.index = current_select_index(st);
    out.plan = st.update_plan;
  }
  out.model = found.load();
  if (!out.index) out.index = select_index_of(*out.model.bytes);
  return out;
}

PopulationStatus TaskRepository::status(const std::string& population_id) {
  wait_for_close_past(population_id, std::numeric_limits<int>::max());
  std::lock_guard lock(mutex_);
  PopulationStatus out;
  PopulationState* loaded = nullptr;
  if (!quarantine_holds(population_id)) {
    try {
      loaded = &state_of(population_id);
    } catch (const Unavailable&) {
      if (!quarantined_.count(population_id)) throw;  // a store failure, not a failed load
    }
  }
  if (!loaded) {
    out.record.id = population_id;
    out.failure_reason = quarantined_.at(population_id).reason;
    return out;
  }
  PopulationState& st = *loaded;
  advance(st, clock_.now());
  out.record = st.record;
  out.round = st.round;
  out.model_etag = st.model.etag;
  out.plan_json = st.train_plan_json;
  out.history = store_.list_rounds(population_id);
  out.rejections = store_.rejections(population_id);
  return out;
}

std::vector<PopulationSummary> TaskRepository::list_populations() {
  std::lock_guard lock(mutex_);
  std::vector<PopulationSummary> out;
  for (const PopulationRecord& p : store_.list_populations()) {
    const bool failed = quarantined_.count(p.id) > 0;
    out.push_back({p.id, failed ? std::string("failed") : to_string(p.state), p.current_round,
                   p.settings.rounds, p.settings.clients_per_round});
  }
  return out;
}

bool TaskRepository::has_task_to_offer(const PopulationState& st, double now) {
  if (st.record.state != RunState::kRunning || st.closing != 0) return false;
  const bool train_left = st.round.number < st.record.settings.rounds &&
                          st.round.train_tasks < st.record.settings.train_tasks_per_round;
  const bool eval_left = st.round.eval_tasks < st.record.settings.eval_tasks_per_round;
  return train_left || eval_left || store_.has_leasable_task(st.record.id, st.round.number, now);
}

void TaskRepository::tick() {
  std::lock_guard lock(mutex_);
  const bool batch_was_open = batch_.is_open();
  const double now = clock_.now();
  // With a shared store any server's tick may close a round (no leader): every running
  // population, not only those this server has loaded.
  std::vector<std::string> ids;
  if (store_.shared()) {
    for (const PopulationRecord& p : store_.list_populations()) {
      if (p.state == RunState::kRunning) ids.push_back(p.id);
    }
  } else {
    for (const auto& entry : populations_) ids.push_back(entry.first);
  }
  for (const std::string& id : ids) {
    if (quarantine_holds(id)) continue;
    try {
      PopulationState& st = state_of(id);
      advance(st, now);
      // A lease that expired hands its task back: wake the claims waiting for one. On a shared
      // store a claim may also have parked while another server held what it needed (the round
      // row creating tasks, a close): nothing here would wake it, so the tick wakes the claims
      // waiting for a round that has a task to lease or to create.
      if (waiters_.waiting(id) > 0 && (store_.has_expired_lease(id, st.round.number, now) ||
                                       (store_.shared() && has_task_to_offer(st, now)))) {
        waiters_.notify(id);
      }
    } catch (const std::exception& e) {
      if (options_.logger) {
        options_.logger->error("event=tick_failed population={} error=\"{}\"", id, e.what());
      }
    }
  }
  // Nobody waits for what the tick did (a batch that was already open has waiters, whose
  // group commit will include it): commit and sync it here.
  if (batch_was_open || !batch_.is_open()) return;
  try {
    batch_.commit(true);
  } catch (const std::exception& e) {
    if (options_.logger) options_.logger->error("event=tick_commit_failed error=\"{}\"", e.what());
  }
}

void TaskRepository::checkpoint_all() {
  wait_for_closes();
  std::lock_guard lock(mutex_);
  // A shared store's rounds are rebuilt from their stored results (accept_train).
  if (store_.shared()) return;
  for (auto& [id, st] : populations_) {
    // Only an aggregator of results 1..result_seq in seq order is a checkpoint of them (a
    // server sharing its store holds just the results it accepted).
    if (!st->aggregator || !st->aggregator_in_seq_order || st->result_seq <= st->checkpoint_seq) {
      continue;
    }
    const CheckpointRecord checkpoint{id, st->round.number, st->result_seq,
                                      to_string_bytes(st->aggregator->checkpoint())};
    batch_.step(
        "checkpoint", [&] { store_.put_checkpoint(checkpoint); }, Durability::kFull);
    st->checkpoint_seq = st->result_seq;
  }
}

std::int64_t TaskRepository::open_leases() {
  std::lock_guard lock(mutex_);
  return store_.count_active_leases(clock_.now());
}

}  // namespace fedleaf::server
