// Store rules: the lease checks of an upload, what a report adds to its round, and
// lock_open_round's answer — the same for every backend.
#include "server/store/store_rules.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace fedleaf::server {
namespace {

TaskRecord leased_task(std::int64_t lease_id, double expires_at) {
  TaskRecord task;
  task.state = TaskState::kLeased;
  task.lease_id = lease_id;
  task.lease_expires_at = expires_at;
  return task;
}

AcceptRequest upload(std::int64_t lease_id, double now, const std::string& sha) {
  AcceptRequest request;
  request.lease_id = lease_id;
  request.now = now;
  request.result_sha256 = sha;
  return request;
}

}  // namespace

TEST_CASE("classify_upload_checks_the_lease_before_anything_changes", "[store_rules]") {
  CHECK(classify_upload(leased_task(7, 100), upload(7, 99, "a")) == AcceptStatus::kAccepted);
  CHECK(classify_upload(leased_task(7, 100), upload(7, 100, "a")) == AcceptStatus::kLeaseExpired);
  CHECK(classify_upload(leased_task(8, 100), upload(7, 99, "a")) == AcceptStatus::kLeasedAgain);

  TaskRecord done = leased_task(7, 100);
  done.state = TaskState::kDone;
  done.completed_lease_id = 7;
  done.result_sha256 = "a";
  CHECK(classify_upload(done, upload(7, 500, "a")) == AcceptStatus::kRepeated);
  CHECK(classify_upload(done, upload(7, 500, "b")) == AcceptStatus::kConflict);
  CHECK(classify_upload(done, upload(6, 50, "a")) == AcceptStatus::kCompletedElsewhere);
}

TEST_CASE("apply_delta_adds_a_train_or_an_evaluate_report", "[store_rules]") {
  RoundRecord round;
  RoundDelta train;
  train.examples = 10;
  train.loss_sum = 5;
  train.upload_bytes = 100;
  apply_delta(round, TaskKind::kTrain, train);
  apply_delta(round, TaskKind::kTrain, train);
  CHECK(round.reports == 2);
  CHECK(round.examples == 20);
  CHECK(round.loss_sum == 10);
  CHECK(round.upload_bytes == 200);

  RoundDelta eval;
  eval.examples = 4;
  eval.eval_sums = {{"accuracy", 3.0}};
  apply_delta(round, TaskKind::kEvaluate, eval);
  apply_delta(round, TaskKind::kEvaluate, eval);
  CHECK(round.eval_reports == 2);
  CHECK(round.eval_examples == 8);
  CHECK(nlohmann::json::parse(round.eval_sums_json)["accuracy"] == 6.0);
  CHECK(round.reports == 2);
}

TEST_CASE("add_round_counts_equals_applying_every_report_of_the_part_to_the_round",
          "[store_rules]") {
  RoundDelta train;
  train.examples = 10;
  train.loss_sum = 5;
  train.accuracy_sum = 8;
  train.accuracy_examples = 10;
  train.upload_bytes = 100;
  RoundDelta eval;
  eval.examples = 4;
  eval.eval_sums = {{"accuracy", 3.0}, {"loss", 1.5}};
  RoundDelta other_eval;
  other_eval.examples = 2;
  other_eval.eval_sums = {{"auc", 0.5}, {"loss", 1.0}};

  RoundRecord all;  // the reference: every report applied to one record
  RoundRecord round;
  RoundRecord part;
  apply_delta(all, TaskKind::kTrain, train);
  apply_delta(round, TaskKind::kTrain, train);
  apply_delta(all, TaskKind::kEvaluate, eval);
  apply_delta(round, TaskKind::kEvaluate, eval);
  for (const RoundDelta* delta : {&train, &train}) {
    apply_delta(all, TaskKind::kTrain, *delta);
    apply_delta(part, TaskKind::kTrain, *delta);
  }
  apply_delta(all, TaskKind::kEvaluate, other_eval);
  apply_delta(part, TaskKind::kEvaluate, other_eval);
  add_round_counts(round, part);

  CHECK(round.reports == all.reports);
  CHECK(round.reports == 3);
  CHECK(round.examples == all.examples);
  CHECK(round.loss_sum == all.loss_sum);
  CHECK(round.accuracy_sum == all.accuracy_sum);
  CHECK(round.accuracy_examples == all.accuracy_examples);
  CHECK(round.upload_bytes == all.upload_bytes);
  CHECK(round.eval_reports == all.eval_reports);
  CHECK(round.eval_examples == all.eval_examples);
  CHECK(nlohmann::json::parse(round.eval_sums_json) == nlohmann::json::parse(all.eval_sums_json));
  CHECK(nlohmann::json::parse(round.eval_sums_json)["loss"] == 2.5);
}

TEST_CASE("open_round_or_nothing_is_the_open_round_nothing_once_closed_and_not_found_without_row",
          "[store_rules]") {
  RoundRecord open;
  open.number = 3;
  CHECK(open_round_or_nothing(open, "p", 3)->number == 3);
  RoundRecord closed = open;
  closed.status = RoundStatus::kClosed;
  CHECK_FALSE(open_round_or_nothing(closed, "p", 3).has_value());
  CHECK_THROWS_MATCHES(open_round_or_nothing(std::nullopt, "p", 4), NotFound,
                       Catch::Matchers::Message("round 4 of population 'p' does not exist"));
}

}  // namespace fedleaf::server
