#include "server/store/store_rules.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace fedleaf::server {

AcceptStatus classify_upload(const TaskRecord& task, const AcceptRequest& request) {
  if (task.state == TaskState::kDone) {
    if (task.completed_lease_id != request.lease_id) return AcceptStatus::kCompletedElsewhere;
    return task.result_sha256 == request.result_sha256 ? AcceptStatus::kRepeated
                                                       : AcceptStatus::kConflict;
  }
  if (task.lease_id != request.lease_id) return AcceptStatus::kLeasedAgain;
  if (request.now >= task.lease_expires_at) return AcceptStatus::kLeaseExpired;
  return AcceptStatus::kAccepted;
}

void apply_delta(RoundRecord& round, TaskKind kind, const RoundDelta& delta) {
  if (kind == TaskKind::kTrain) {
    round.reports += 1;
    round.examples += delta.examples;
    round.loss_sum += delta.loss_sum;
    round.accuracy_sum += delta.accuracy_sum;
    round.accuracy_examples += delta.accuracy_examples;
    round.upload_bytes += delta.upload_bytes;
    return;
  }
  round.eval_reports += 1;
  round.eval_examples += delta.examples;
  nlohmann::json sums = nlohmann::json::parse(round.eval_sums_json);
  for (const auto& [name, value] : delta.eval_sums) {
    sums[name] = sums.value(name, 0.0) + value;
  }
  round.eval_sums_json = sums.dump();
}

void add_round_counts(RoundRecord& round, const RoundRecord& part) {
  round.reports += part.reports;
  round.examples += part.examples;
  round.loss_sum += part.loss_sum;
  round.accuracy_sum += part.accuracy_sum;
  round.accuracy_examples += part.accuracy_examples;
  round.upload_bytes += part.upload_bytes;
  round.eval_reports += part.eval_reports;
  round.eval_examples += part.eval_examples;
  nlohmann::json sums = nlohmann::json::parse(round.eval_sums_json);
  const nlohmann::json part_sums = nlohmann::json::parse(part.eval_sums_json);
  for (auto it = part_sums.begin(); it != part_sums.end(); ++it) {
    sums[it.key()] = sums.value(it.key(), 0.0) + it.value().get<double>();
  }
  round.eval_sums_json = sums.dump();
}

void complete_task(TaskRecord& task, const AcceptRequest& request, int reports) {
  task.state = TaskState::kDone;
  task.completed_lease_id = task.lease_id;
  task.result_sha256 = request.result_sha256;
  task.result_status = 201;
  task.result_body = request.receipt_body ? request.receipt_body(reports) : std::string("{}");
}

std::optional<RoundRecord> open_round_or_nothing(std::optional<RoundRecord> round,
                                                 const std::string& population_id, int number) {
  if (!round) {
    throw NotFound("round " + std::to_string(number) + " of population '" + population_id +
                   "' does not exist");
  }
  if (round->status != RoundStatus::kOpen) return std::nullopt;
  return round;
}

}  // namespace fedleaf::server
