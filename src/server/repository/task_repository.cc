#include "server/repository/task_repository.h"

#include "server/repository/population_state.h"
#include "server/repository/round_close.h"
#include "server/repository/upload_receipt.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/aggregation/round_aggregator.h"
#include "core/safetensors.h"
#include "core/train/plan.h"
#include "server/repository/result_summary.h"
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
  for (const PopulationRecord& record : store_.list_populations()) {
    try {
      populations_.emplace(record.id, load_population_state(store_, record));
    } catch (const std::exception& e) {
      quarantine(record.id, e.what());
    }
  }
}

void TaskRepository::quarantine(const std::string& population_id, const std::string& reason) {
  quarantined_[population_id] = reason;
  if (options_.logger) {
    options_.logger->error("event=population_quarantined population={} reason=\"{}\"",
                           population_id, reason);
  }
}

TaskRepository::~TaskRepository() {
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

template <class Body>
void TaskRepository::population_step(const std::string& population_id, const std::string& what,
                                     Body&& body) {
  try {
    batch_.step(what, std::forward<Body>(body));
  } catch (...) {
    populations_.erase(population_id);
    throw;
  }
}

void TaskRepository::commit_batch() {
  std::lock_guard lock(mutex_);
  batch_.commit(false);
}

PopulationState& TaskRepository::state_of(const std::string& population_id) {
  auto it = populations_.find(population_id);
  if (it != populations_.end()) return *it->second;
  if (auto failed = quarantined_.find(population_id); failed != quarantined_.end()) {
    throw Unavailable("population '" + population_id +
                      "' failed to load and is quarantined: " + failed->second);
  }
  auto record = store_.find_population(population_id);
  if (!record) throw NotFound("population '" + population_id + "' does not exist");
  std::unique_ptr<PopulationState> loaded;
  try {
    loaded = load_population_state(store_, *record);
  } catch (const std::exception& e) {
    quarantine(population_id, e.what());
    throw Unavailable("population '" + population_id +
                      "' failed to load and is quarantined: " + e.what());
  }
  return *populations_.emplace(population_id, std::move(loaded)).first->second;
}

CreatedPopulation TaskRepository::create_population(const PopulationSpec& spec) {
  std::lock_guard lock(mutex_);
  std::string model_bytes;
  if (spec.initial_model) {
    model_bytes = *spec.initial_model;
  } else {
    if (!options_.model_initializer) {
      throw InvalidInput(
          "population: 'seed' is not supported by this server; send "
          "'initial_model_b64'");
    }
    model_bytes = to_string_bytes(options_.model_initializer(spec.plan_json, *spec.seed));
  }
  // The whole plan, as every leaf will parse it (both kinds of task carry it).
  core::parse_plan(plan_with_kind(spec.plan_json, "train"));
  core::parse_plan(plan_with_kind(spec.plan_json, "evaluate"));
  // Validates the model bytes and that the plan's updates fit the model.
  core::NamedTensors tensors = decode_model(model_bytes);
  auto update_plan =
      std::make_shared<const core::UpdatePlan>(core::parse_update_plan(spec.plan_json));
  core::RoundAggregator check(*update_plan, tensors,
                              static_cast<std::size_t>(spec.clients_per_round));

  const double now = clock_.now();
  CreatedPopulation created;
  created.id = spec.id ? *spec.id : "pop-" + generate_token().substr(3, 12);
  created.client_token = generate_token();
  created.model_etag = sha256_hex(model_bytes);

  PopulationRecord record;
  record.id = created.id;
  record.plan_json = spec.plan_json;
  record.client_token_hash = hash_token(created.client_token);
  record.rounds = spec.rounds;
  record.clients_per_round = spec.clients_per_round;
  record.min_reports = spec.min_reports;
  record.round_deadline_s = spec.round_deadline_s;
  record.lease_s = spec.lease_s;
  record.train_tasks_per_round = spec.train_tasks_per_round;
  record.eval_tasks_per_round = spec.eval_tasks_per_round;
  record.created_at = now;
  RoundRecord round0;
  round0.population_id = record.id;
  round0.started_at = now;
  round0.deadline = now + record.round_deadline_s;

  batch_.step(
      "create population",
      [&] {
        if (populations_.count(record.id) || store_.find_population(record.id)) {
          throw Conflict("population '" + record.id + "' already exists");
        }
        store_.insert_population(record);
        store_.insert_round(round0);
        store_.insert_model({record.id, 0, created.model_etag, model_bytes});
      },
      Durability::kFull);
  populations_[record.id] =
      new_population_state(record, round0, created.model_etag, std::move(model_bytes),
                           std::move(update_plan), std::move(check));
  if (options_.logger) {
    options_.logger->info("event=population_created population={} rounds={} clients_per_round={}",
                          record.id, record.rounds, record.clients_per_round);
  }
  return created;
}

void TaskRepository::advance(PopulationState& st, double now) {
  for (;;) {
    switch (next_round_step(st.record, st.round, now)) {
      case RoundStep::kStay:
        return;
      case RoundStep::kCloseTraining:
        publish_next_model(st, now);
        break;
      case RoundStep::kFinish:
        finish(st, now);
        break;
    }
    // A new round has new tasks; a finished population answers its waiters "finished".
    waiters_.notify(st.record.id);
  }
}

void TaskRepository::publish_next_model(PopulationState& st, double now) {
  const std::string id = st.record.id;
  RoundClose close = close_training_round(st, now);
  if (close.withheld_nonfinite > 0 && options_.logger) {
    options_.logger->warn(
        "event=round_overflow_withheld population={} round={} elements={} (each kept its old "
        "value: the aggregate would not have been finite)",
        id, st.round.number, close.withheld_nonfinite);
  }
  // A step of the batch like any other: whoever learns of the new round waits for its commit
  // (claims) or its sync (uploads, model and status reads; see Router).
  const auto store_start = std::chrono::steady_clock::now();
  population_step(id, "close round", [&] {
    store_.update_round(close.closed);
    store_.delete_results(id, close.closed.number);
    store_.delete_checkpoint(id, close.closed.number);
    store_.insert_round(close.opened);
    store_.insert_model({id, close.opened.number, close.model_etag, close.model_bytes});
    store_.update_population(close.record);
  });
  const double store_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - store_start).count();
  const RoundRecord& closed = close.closed;
  const RoundCloseTimings& t = close.timings;
  metrics_.observe_round_duration(now - closed.started_at);
  metrics_.observe_phase("close_finalize", t.finalize_s);
  metrics_.observe_phase("close_encode", t.encode_s);
  metrics_.observe_phase("close_hash", t.hash_s);
  metrics_.observe_phase("close_store", store_s);
  if (options_.logger) {
    options_.logger->info(
        "event=round_closed population={} round={} reports={} examples={} duration_s={:.3f} "
        "model_etag={} model_bytes={} finalize_ms={:.1f} encode_ms={:.1f} hash_ms={:.1f} "
        "store_ms={:.1f}",
        id, closed.number, closed.reports, closed.examples, now - closed.started_at,
        close.model_etag, close.model_bytes.size(), 1e3 * t.finalize_s, 1e3 * t.encode_s,
        1e3 * t.hash_s, 1e3 * store_s);
  }
  st.record = close.record;
  st.round = close.opened;
  st.model = {close.model_etag, std::make_shared<const std::string>(std::move(close.model_bytes))};
  st.result_seq = st.checkpoint_seq = 0;
  if (close.training_over) {
    st.aggregator.reset();
  } else {
    st.aggregator.emplace(*st.update_plan, std::move(close.next), expected_reports(st.record));
  }
  if (options_.logger && st.record.state == "finished") {
    options_.logger->info("event=population_finished population={} rounds={}", id,
                          st.record.rounds);
  }
}

void TaskRepository::finish(PopulationState& st, double now) {
  const std::string id = st.record.id;
  RoundRecord closed = st.round;
  closed.status = "closed";
  closed.closed_at = now;
  PopulationRecord record = st.record;
  record.state = "finished";
  population_step(id, "finish population", [&] {
    store_.update_round(closed);
    store_.update_population(record);
  });
  st.round = closed;
  st.record = record;
  if (options_.logger) {
    options_.logger->info("event=population_finished population={} rounds={} eval_reports={}", id,
                          record.rounds, closed.eval_reports);
  }
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
  if (st.record.state == "finished") {
    metrics_.count_claim("finished");
    return retry_hint(st.record, st.round, now, std::nullopt);
  }

  // Evaluate tasks first: there are few of them and they measure the model just published.
  struct Pool {
    const char* kind;
    int limit;
    int created;
  };
  std::vector<Pool> pools;
  if (st.record.eval_tasks_per_round > 0) {
    pools.push_back({"evaluate", st.record.eval_tasks_per_round, st.round.eval_tasks});
  }
  const bool wants_later_round = st.round.number < min_round;
  if (st.round.number < st.record.rounds && !wants_later_round) {
    pools.push_back({"train", st.record.train_tasks_per_round, st.round.train_tasks});
  }
  for (const Pool& pool : pools) {
    std::optional<TaskRecord> expired =
        store_.find_expired_task(population_id, st.round.number, pool.kind, now);
    if (!expired && pool.created >= pool.limit) continue;

    TaskAssignment task;
    task.population = population_id;
    task.round = st.round.number;
    task.kind = pool.kind;
    task.lease_token = generate_token();
    task.lease_expires_at = now + st.record.lease_s;
    RoundRecord round = st.round;
    population_step(population_id, "claim", [&] {
      TaskRecord record;
      if (expired) {
        record = *expired;
      } else {
        record.population_id = population_id;
        record.round = round.number;
        record.kind = pool.kind;
        record.id = store_.insert_task(record);
        (task.kind == "train" ? round.train_tasks : round.eval_tasks) += 1;
        store_.update_round(round);
      }
      record.state = "leased";
      record.lease_expires_at = task.lease_expires_at;
      record.lease_id =
          store_.insert_lease({0, record.id, hash_token(task.lease_token), task.lease_expires_at});
      store_.update_task(record);
      task.task_id = record.id;
    });
    st.round = round;
    task.plan_json = task.kind == "train" ? st.train_plan_json : st.eval_plan_json;
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

void TaskRepository::reject(const std::string& population_id, const std::string& reason) {
  metrics_.count_rejection(reason);
  try {
    batch_.step("count rejection", [&] { store_.add_rejection(population_id, reason); });
  } catch (const std::exception& e) {
    // The rejection itself stands; only its statistic is lost.
    if (options_.logger)
      options_.logger->warn("event=rejection_not_counted error=\"{}\"", e.what());
  }
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
    reject(population_id, "forbidden");
    throw Forbidden("lease token does not match task " + std::to_string(task_id));
  }
  const double now = clock_.now();
  advance(st, now);
  const std::string task_name = "task " + std::to_string(task_id);

  if (task->state == "done") {
    if (task->completed_lease_id == lease_id) {
      if (sha == task->result_sha256) return {200, decode_receipt(*task)};
      reject(population_id, "conflict");
      throw Conflict(task_name + ": a different result was already accepted for this lease");
    }
    reject(population_id, "lease_expired");
    throw Gone(task_name + ": this lease expired and the task was completed under another lease");
  }
  if (lease_id != task->lease_id) {
    reject(population_id, "lease_expired");
    throw Gone(task_name + ": this lease expired and the task was leased again");
  }
  if (now >= task->lease_expires_at) {
    reject(population_id, "lease_expired");
    throw Gone(task_name + ": the lease expired " + std::to_string(now - task->lease_expires_at) +
               " s ago");
  }
  if (task->kind == "evaluate") return accept_evaluate(st, std::move(*task), body, sha, now);
  if (task->round != st.round.number || st.round.status != "open" || !st.aggregator) {
    reject(population_id, "round_closed");
    throw Gone(task_name + ": round " + std::to_string(task->round) + " of population '" +
               population_id + "' is closed");
  }
  return accept_train(st, std::move(*task), body, sha, now);
}

UploadOutcome TaskRepository::accept_train(PopulationState& st, TaskRecord task,
                                           const std::string& body, const std::string& sha,
                                           double now) {
  const std::string id = st.record.id;
  const auto* data = reinterpret_cast<const std::uint8_t*>(body.data());
  ResultSummary summary;
  try {
    summary = summarize_result(data, body.size(), "train");
    if (!summary.task_id.empty() && summary.task_id != std::to_string(task.id)) {
      throw InvalidInput("result metadata 'task_id': '" + summary.task_id +
                         "' is not the uploaded task " + std::to_string(task.id));
    }
    // All or nothing: on InvalidInput the aggregator is unchanged.
    const auto fold_start = std::chrono::steady_clock::now();
    st.aggregator->add_result(data, body.size());
    metrics_.observe_phase(
        "fold",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - fold_start).count());
  } catch (const InvalidInput&) {
    reject(id, "invalid_result");
    throw;
  }

  RoundRecord round = st.round;
  round.reports += 1;
  round.examples += summary.num_examples;
  round.loss_sum += summary.num_examples * summary.metrics.at("loss");
  if (auto it = summary.metrics.find("accuracy"); it != summary.metrics.end()) {
    round.accuracy_sum += summary.num_examples * it->second;
    round.accuracy_examples += summary.num_examples;
  }
  round.upload_bytes += static_cast<std::int64_t>(body.size());
  const std::int64_t seq = st.result_seq + 1;
  const bool checkpoint_due =
      options_.checkpoint_every > 0 && seq - st.checkpoint_seq >= options_.checkpoint_every;

  task.state = "done";
  task.completed_lease_id = task.lease_id;
  task.result_sha256 = sha;
  task.result_status = 201;
  const UploadReceipt receipt{task.id, id, task.round, "train", round.reports, sha};
  task.result_body = encode_receipt(receipt);
  // A step of the open batch: committed and synced by GroupCommit before the answer is sent. On
  // failure the in-memory aggregator, which already holds this result, is reloaded.
  population_step(id, "accept result", [&] {
    store_.insert_result({id, round.number, seq, task.id, body});
    store_.update_task(task);
    store_.update_round(round);
    if (checkpoint_due) {
      store_.put_checkpoint({id, round.number, seq, to_string_bytes(st.aggregator->checkpoint())});
    }
  });
  st.round = round;
  st.result_seq = seq;
  if (checkpoint_due) st.checkpoint_seq = seq;
  advance(st, now);
  return {201, receipt};
}

UploadOutcome TaskRepository::accept_evaluate(PopulationState& st, TaskRecord task,
                                              const std::string& body, const std::string& sha,
                                              double now) {
  const std::string id = st.record.id;
  ResultSummary summary;
  try {
    summary = summarize_result(reinterpret_cast<const std::uint8_t*>(body.data()), body.size(),
                               "evaluate");
  } catch (const InvalidInput&) {
    reject(id, "invalid_result");
    throw;
  }
  const bool current = task.round == st.round.number;
  std::optional<RoundRecord> found = current ? st.round : store_.find_round(id, task.round);
  if (!found) throw Error("round " + std::to_string(task.round) + " of '" + id + "' is missing");
  RoundRecord round = *found;
  round.eval_reports += 1;
  round.eval_examples += summary.num_examples;
  json sums = json::parse(round.eval_sums_json);
  for (const auto& [name, value] : summary.metrics) {
    sums[name] = sums.value(name, 0.0) + summary.num_examples * value;
  }
  round.eval_sums_json = sums.dump();

  task.state = "done";
  task.completed_lease_id = task.lease_id;
  task.result_sha256 = sha;
  task.result_status = 201;
  const UploadReceipt receipt{task.id, id, task.round, "evaluate", std::nullopt, sha};
  task.result_body = encode_receipt(receipt);
  population_step(id, "accept evaluation", [&] {
    store_.update_task(task);
    store_.update_round(round);
  });
  if (current) st.round = round;
  advance(st, now);
  return {201, receipt};
}

ModelBlob TaskRepository::published_model(PopulationState& st, int round) {
  if (round == st.round.number) return st.model;
  if (round < 0 || round > st.round.number) {
    throw NotFound("round " + std::to_string(round) + " of population '" + st.record.id +
                   "' has no published model (current round " + std::to_string(st.round.number) +
                   ")");
  }
  auto record = store_.find_model(st.record.id, round);
  if (!record) throw NotFound("model of round " + std::to_string(round) + " is missing");
  return {record->etag, std::make_shared<const std::string>(std::move(record->bytes))};
}

ModelBlob TaskRepository::model(const std::string& population_id, int round) {
  std::lock_guard lock(mutex_);
  PopulationState& st = state_of(population_id);
  advance(st, clock_.now());
  return published_model(st, round);
}

namespace {

std::shared_ptr<const core::SafetensorsIndex> index_model(const std::string& bytes) {
  return std::make_shared<const core::SafetensorsIndex>(
      core::index_safetensors(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

}  // namespace

SelectableModel TaskRepository::selectable_model(const std::string& population_id,
                                                 const std::string& client_token, int round) {
  const std::string presented_hash = hash_token(client_token);  // outside the lock
  std::lock_guard lock(mutex_);
  PopulationState& st = state_of(population_id);
  if (!constant_time_equals(presented_hash, st.record.client_token_hash)) {
    throw Forbidden("client token does not match population '" + population_id + "'");
  }
  advance(st, clock_.now());
  ModelBlob blob = published_model(st, round);
  if (blob.etag != st.model.etag) return {blob, index_model(*blob.bytes), st.update_plan};
  if (st.select_index_etag != st.model.etag) {
    st.select_index = index_model(*st.model.bytes);
    st.select_index_etag = st.model.etag;
  }
  return {std::move(blob), st.select_index, st.update_plan};
}

PopulationStatus TaskRepository::status(const std::string& population_id) {
  std::lock_guard lock(mutex_);
  PopulationStatus out;
  if (auto failed = quarantined_.find(population_id); failed != quarantined_.end()) {
    out.record.id = population_id;
    out.record.state = "failed";
    out.failure_reason = failed->second;
    return out;
  }
  PopulationState& st = state_of(population_id);
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
    out.push_back({p.id, failed ? std::string("failed") : p.state, p.current_round, p.rounds,
                   p.clients_per_round});
  }
  return out;
}

void TaskRepository::tick() {
  std::lock_guard lock(mutex_);
  const bool batch_was_open = batch_.is_open();
  const double now = clock_.now();
  std::vector<std::string> ids;
  for (const auto& entry : populations_) ids.push_back(entry.first);
  for (const std::string& id : ids) {
    if (quarantined_.count(id)) continue;
    try {
      PopulationState& st = state_of(id);
      advance(st, now);
      // A lease that expired hands its task back: wake the claims waiting for one.
      if (waiters_.waiting(id) > 0 &&
          (store_.find_expired_task(id, st.round.number, "train", now) ||
           store_.find_expired_task(id, st.round.number, "evaluate", now))) {
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
  std::lock_guard lock(mutex_);
  for (auto& [id, st] : populations_) {
    if (!st->aggregator || st->result_seq <= st->checkpoint_seq) continue;
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
