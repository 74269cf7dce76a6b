#include "server/repository/upload_intake.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>

#include "core/aggregation/round/round_aggregator.h"
#include "core/text/text_format.h"
#include "core/wire/result_format.h"
#include "server/repository/round_rules.h"
#include "server/repository/upload_refusal.h"
#include "server/store/store_rules.h"
#include "server/util/server_errors.h"
#include "server/util/sha256.h"
#include "server/util/tokens.h"

namespace fedleaf::server {
namespace {

using Steady = std::chrono::steady_clock;

// Records the wall time since `start` as the step `phase` of accepting an upload
// (fedleaf_phase_seconds; scripts/bench.sh ingest reads them for its breakdown) and restarts it.
void observe_step(ServerMetrics& metrics, const char* phase, Steady::time_point& start) {
  const Steady::time_point now = Steady::now();
  metrics.observe_phase(phase, std::chrono::duration<double>(now - start).count());
  start = now;
}

// The examples an evaluate report is weighed with in its round's means: its claim capped as a
// train report of the open round is (the plan's cap once training is over), so that no single
// claim sets a round's evaluation either.
std::uint64_t evaluation_examples(const PopulationState& st, std::uint64_t claimed) {
  if (st.aggregator) return st.aggregator->folded_examples(claimed);
  const std::uint64_t cap = st.update_plan->max_examples_per_report;
  return cap != 0 && claimed > cap ? cap : claimed;
}

}  // namespace

UploadIntake::UploadIntake(RepositoryParts& parts, RoundLifecycle& rounds)
    : parts_(parts), rounds_(rounds) {}

void UploadIntake::reject(const RefusedUpload& upload) {
  bool counted = false;
  try {
    parts_.batch.step("count rejection", [&] { counted = parts_.store.add_rejection(upload); });
  } catch (const std::exception& e) {
    // The rejection itself stands; only its statistic is lost.
    if (parts_.options.logger)
      parts_.options.logger->warn("event=rejection_not_counted error=\"{}\"", e.what());
  }
  if (counted) parts_.metrics.count_rejection(upload.reason);
}

UploadOutcome UploadIntake::upload(std::int64_t task_id, const std::string& lease_token,
                                   std::string body) {
  // Hashing needs no shared state: done before the lock, which every request waits for.
  Steady::time_point step = Steady::now();
  const std::string presented_hash = hash_token(lease_token);
  const std::string sha = sha256_hex(body);
  observe_step(parts_.metrics, "upload_hash", step);
  std::lock_guard lock(parts_.mutex);
  observe_step(parts_.metrics, "upload_lock_wait", step);
  std::optional<TaskWithLeases> found = parts_.store.find_task_with_leases(task_id);
  if (!found) throw NotFound("task " + std::to_string(task_id) + " does not exist");
  const TaskRecord* task = &found->task;
  const std::string population_id = task->population_id;
  PopulationState& st = state_for(*task);

  std::int64_t lease_id = 0;  // every lease is compared, so timing does not reveal which matched
  for (const LeaseRecord& lease : found->leases) {
    if (constant_time_equals(presented_hash, lease.token_hash)) lease_id = lease.id;
  }
  if (lease_id == 0) {
    reject({population_id, "forbidden", 0, {}});
    throw Forbidden("lease token does not match task " + std::to_string(task_id));
  }
  const double now = parts_.clock.now();
  rounds_.advance(st, now);
  observe_step(parts_.metrics, "upload_lease", step);
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
  TrainUpload train{std::move(body), std::nullopt, {}};
  if (st.buffered) {
    // A report whose version another server closed between our read and our accept folds into
    // the version that opened instead (staleness counted anew): only training that is over
    // leaves it nowhere to fold (410 below).
    while (st.round.status == RoundStatus::kOpen && st.aggregator) {
      if (std::optional<UploadOutcome> accepted =
              accept_buffered_train(st, *task, lease_id, train, sha, now)) {
        return *accepted;
      }
      parts_.populations.reload(st);
      parts_.waiters.notify(population_id);  // as PopulationCache::refresh on a moved round
      rounds_.advance(st, now);
    }
  }
  if (task->round != st.round.number || st.round.status != RoundStatus::kOpen || !st.aggregator) {
    return answer_refused(population_id, AcceptStatus::kRoundClosed, *task, lease_id, sha);
  }
  return *accept_train(st, *task, lease_id, train, sha, now, 1.0);
}

PopulationState& UploadIntake::state_for(const TaskRecord& task) {
  // A server sharing its store accepts a train report of the round it has loaded without
  // re-reading it first (one statement fewer per upload) while nothing would close that round:
  // the accept's statement counts the report only if the round is still open, which makes it
  // the population's current round, and answers a round another server closed as the re-read
  // would have (the report is refused; the next claim or upload of a later round re-reads).
  if (parts_.store.shared() && task.kind == TaskKind::kTrain) {
    PopulationState* st = parts_.populations.loaded(task.population_id);
    if (st != nullptr && !st->buffered && st->aggregator && st->closing == 0 &&
        st->record.state == RunState::kRunning && st->round.status == RoundStatus::kOpen &&
        st->round.number == task.round &&
        next_round_step(st->record, st->round, parts_.clock.now()) == RoundStep::kStay) {
      return *st;
    }
  }
  return parts_.populations.state_of(task.population_id);
}

UploadOutcome UploadIntake::answer_refused(const std::string& population_id, AcceptStatus status,
                                           const TaskRecord& task, std::int64_t lease_id,
                                           const std::string& sha) {
  if (status == AcceptStatus::kRepeated) return {200, decode_receipt(task)};
  reject({population_id, refusal_reason(status), lease_id, sha});
  throw_refusal(status, task, population_id, parts_.clock.now());
}

std::optional<UploadOutcome> UploadIntake::accept_train(PopulationState& st, const TaskRecord& task,
                                                        std::int64_t lease_id, TrainUpload& upload,
                                                        const std::string& sha, double now,
                                                        double weight_scale) {
  const std::string id = st.record.id;
  const auto* data = reinterpret_cast<const std::uint8_t*>(upload.body.data());
  const core::ResultHeader& summary = upload.header;
  try {
    Steady::time_point step = Steady::now();
    if (!upload.index) {
      core::SafetensorsIndex index = core::index_result(data, upload.body.size());
      upload.header = core::read_result_header(index, core::ResultKind::kTrain);
      upload.index = std::move(index);
    }
    observe_step(parts_.metrics, "upload_header", step);
    if (!summary.task_id.empty() && summary.task_id != std::to_string(task.id)) {
      throw InvalidInput("result metadata 'task_id': " + core::in_quotes(summary.task_id) +
                         " is not the uploaded task " + std::to_string(task.id));
    }
    // All or nothing: on InvalidInput the aggregator is unchanged.
    st.aggregator->add_result(*upload.index, data, summary, weight_scale);
    observe_step(parts_.metrics, "fold", step);
  } catch (const InvalidInput&) {
    reject({id, "invalid_result", lease_id, sha});
    throw;
  }

  // What the fold weighed the report with (its claim capped), so no claim sets the round's numbers.
  const auto examples = static_cast<double>(st.aggregator->folded_examples(summary.num_examples));
  AcceptRequest request{task.id, lease_id, sha, now, {}, {}, nullptr, std::nullopt};
  request.train_bytes = std::move(upload.body);
  request.delta.examples = examples;
  request.delta.loss_sum = examples * summary.metrics.at("loss");
  if (auto it = summary.metrics.find("accuracy"); it != summary.metrics.end()) {
    request.delta.accuracy_sum = examples * it->second;
    request.delta.accuracy_examples = examples;
  }
  request.delta.upload_bytes = static_cast<std::int64_t>(request.train_bytes.size());
  if (st.buffered) request.fold_round = st.round.number;
  request.receipt_body = [&](int reports) {
    return encode_receipt(
        {task.id, id, task.round, TaskKind::kTrain, reports, sha, st.round.number});
  };
  // A step of the open batch: committed and synced by GroupCommit before the answer is sent. On
  // failure the in-memory aggregator, which already holds this result, is reloaded.
  std::optional<AcceptOutcome> outcome;
  bool checkpointed = false;
  Steady::time_point step = Steady::now();
  parts_.population_step(id, "accept result", [&] {
    outcome = parts_.store.accept_result(request);
    if (outcome->status != AcceptStatus::kAccepted) return;
    // A shared store's seqs skip values (other servers' results, some not yet committed): its
    // rounds are rebuilt from the stored results at close, never checkpointed midway.
    const std::int64_t seq = outcome->seq;
    // A private round is never checkpointed: its un-noised sum stays in memory only.
    if (!parts_.store.shared() && !st.aggregator->is_private() && st.aggregator_in_seq_order &&
        seq == st.result_seq + 1 && parts_.options.checkpoint_every > 0 &&
        seq - st.checkpoint_seq >= parts_.options.checkpoint_every) {
      parts_.store.put_checkpoint(
          {id, st.round.number, seq, to_string_bytes(st.aggregator->checkpoint())});
      checkpointed = true;
    }
  });
  observe_step(parts_.metrics, checkpointed ? "upload_store_checkpoint" : "upload_store", step);
  if (outcome->status != AcceptStatus::kAccepted) {
    // Another server changed the task or closed the round after our read: the aggregator holds
    // a result the store does not.
    st.aggregator_in_seq_order = false;
    if (st.buffered && outcome->status == AcceptStatus::kRoundClosed) {
      upload.body = std::move(request.train_bytes);  // folded again into the version that opened
      return std::nullopt;
    }
    return answer_refused(id, outcome->status, outcome->task, lease_id, sha);
  }
  const std::int64_t seq = outcome->seq;
  if (!parts_.store.shared() && seq != st.result_seq + 1) st.aggregator_in_seq_order = false;
  st.result_seq = seq;
  if (checkpointed) st.checkpoint_seq = seq;
  st.round = outcome->round;
  rounds_.advance(st, now);
  return UploadOutcome{201, decode_receipt(outcome->task)};
}

UploadOutcome UploadIntake::accept_evaluate(PopulationState& st, const TaskRecord& task,
                                            std::int64_t lease_id, const std::string& body,
                                            const std::string& sha, double now) {
  const std::string id = st.record.id;
  core::ResultHeader summary;
  try {
    summary = core::read_result_header(
        core::index_result(reinterpret_cast<const std::uint8_t*>(body.data()), body.size()),
        core::ResultKind::kEvaluate);
  } catch (const InvalidInput&) {
    reject({id, "invalid_result", lease_id, sha});
    throw;
  }
  const auto examples = static_cast<double>(evaluation_examples(st, summary.num_examples));
  AcceptRequest request{task.id, lease_id, sha, now, {}, {}, nullptr, std::nullopt};
  request.delta.examples = examples;
  for (const auto& [name, value] : summary.metrics) {
    request.delta.eval_sums[name] = examples * value;
  }
  request.receipt_body = [&](int) {
    return encode_receipt({task.id, id, task.round, TaskKind::kEvaluate, std::nullopt, sha});
  };
  std::optional<AcceptOutcome> outcome;
  parts_.population_step(id, "accept evaluation",
                         [&] { outcome = parts_.store.accept_result(request); });
  if (outcome->status != AcceptStatus::kAccepted) {
    return answer_refused(id, outcome->status, outcome->task, lease_id, sha);
  }
  if (task.round == st.round.number) st.round = outcome->round;
  rounds_.advance(st, now);
  return {201, decode_receipt(outcome->task)};
}

}  // namespace fedleaf::server
