// The Store suite (store_suite.h), every backend: results accepted, folded into their round and
// refused, and refusals counted.
#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "server/store/store.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"
#include "tests/server/store_suite.h"

namespace fedleaf::server {
namespace {

using store_suite::accept;
using store_suite::claim;
using store_suite::close;
using store_suite::create;
using store_suite::population;
using store_suite::round_record;
using store_suite::train_upload;

}  // namespace

FEDLEAF_STORE_CASE(store_accept_result_completes_the_task_and_counts_the_report,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  auto a = *claim(store, TaskKind::kTrain, 10);
  auto b = *claim(store, TaskKind::kTrain, 10);

  const AcceptOutcome first = accept(store, train_upload(a, "sha-a", 11));
  const AcceptOutcome second = accept(store, train_upload(b, "sha-b", 11));

  CHECK(first.status == AcceptStatus::kAccepted);
  CHECK(first.round.reports == 1);
  CHECK(second.round.reports == 2);
  CHECK(second.task.result_body == "{\"reports\":2}");
  const TaskRecord task = *store.find_task(a.task_id);
  CHECK(task.state == TaskState::kDone);
  CHECK(task.completed_lease_id == a.lease_id);
  CHECK(task.result_sha256 == "sha-a");
  CHECK(task.result_status == 201);
  CHECK(task.result_body == "{\"reports\":1}");
  const RoundRecord round = *store.find_round("p", 0);
  CHECK(round.reports == 2);
  CHECK(round.examples == 20);
  CHECK(round.loss_sum == 10);
  CHECK(round.accuracy_sum == 16);
  CHECK(round.accuracy_examples == 20);
  CHECK(round.upload_bytes == 200);
  const auto results = store.list_results("p", 0, 0);
  REQUIRE(results.size() == 2);
  CHECK(results[0].seq == 1);
  CHECK(results[0].task_id == a.task_id);
  CHECK(results[0].bytes == "result-sha-a");
  CHECK(results[1].seq == 2);
  CHECK(store.list_results("p", 0, 1).size() == 1);
  CHECK(store.count_active_leases(11) == 0);
}

FEDLEAF_STORE_CASE(store_accept_result_is_idempotent_per_lease_and_refuses_the_rest,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  auto a = *claim(store, TaskKind::kTrain, 10);
  accept(store, train_upload(a, "sha-a", 11));

  const AcceptOutcome repeat = accept(store, train_upload(a, "sha-a", 12));
  const AcceptOutcome different = accept(store, train_upload(a, "sha-x", 12));
  ClaimedTask other_lease = a;
  other_lease.lease_id = a.lease_id + 1000;
  const AcceptOutcome elsewhere = accept(store, train_upload(other_lease, "sha-a", 12));

  CHECK(repeat.status == AcceptStatus::kRepeated);
  CHECK(repeat.task.result_body == "{\"reports\":1}");
  CHECK(different.status == AcceptStatus::kConflict);
  CHECK(elsewhere.status == AcceptStatus::kCompletedElsewhere);
  CHECK(store.find_round("p", 0)->reports == 1);
  CHECK(store.list_results("p", 0, 0).size() == 1);
}

FEDLEAF_STORE_CASE(store_accept_result_refuses_expired_and_replaced_leases,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  auto a = *claim(store, TaskKind::kTrain, 10, 1);  // expires at 15

  const AcceptOutcome expired = accept(store, train_upload(a, "sha-a", 15));
  auto again = *claim(store, TaskKind::kTrain, 16, 1);
  const AcceptOutcome replaced = accept(store, train_upload(a, "sha-a", 17));
  const AcceptOutcome current = accept(store, train_upload(again, "sha-a", 17));

  CHECK(expired.status == AcceptStatus::kLeaseExpired);
  CHECK(replaced.status == AcceptStatus::kLeasedAgain);
  CHECK(current.status == AcceptStatus::kAccepted);
  CHECK(store.find_round("p", 0)->reports == 1);
  StoreTransaction tx(store, Durability::kNormal);
  AcceptRequest unknown = train_upload(a, "sha", 17);
  unknown.task_id = 9999;
  CHECK_THROWS_AS(store.accept_result(unknown), NotFound);
}

FEDLEAF_STORE_CASE(store_accept_result_refuses_train_of_a_closed_round_not_evaluations,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  auto train = *claim(store, TaskKind::kTrain, 10);
  auto eval = *claim(store, TaskKind::kEvaluate, 10, 1);
  close(store, 0, 11);
  AcceptRequest evaluation = train_upload(eval, "sha-e", 12);
  evaluation.train_bytes.clear();
  evaluation.delta = {};
  evaluation.delta.examples = 4;
  evaluation.delta.eval_sums = {{"loss", 2.0}, {"accuracy", 3.0}};

  const AcceptOutcome late = accept(store, train_upload(train, "sha-t", 12));
  const AcceptOutcome evaluated = accept(store, evaluation);
  accept(store, evaluation);  // a repeat adds nothing

  CHECK(late.status == AcceptStatus::kRoundClosed);
  CHECK(store.find_task(train.task_id)->state == TaskState::kLeased);
  CHECK(evaluated.status == AcceptStatus::kAccepted);
  const RoundRecord round = *store.find_round("p", 0);
  CHECK(round.reports == 0);
  CHECK(round.eval_reports == 1);
  CHECK(round.eval_examples == 4);
  CHECK(round.eval_sums_json == R"({"accuracy":3.0,"loss":2.0})");
}

// A buffered population's report folds into the open version, not its task's round: counted and
// stored there; once that round is closed too it is kRoundClosed and changes nothing.
FEDLEAF_STORE_CASE(store_folds_a_result_into_the_round_it_names, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  const ClaimedTask old = *claim(store, TaskKind::kTrain, 10);  // round 0
  const ClaimedTask later = *claim(store, TaskKind::kTrain, 10, 5, "lease-2");
  {
    StoreTransaction tx(store, Durability::kFull);
    RoundCloseWrite write;
    write.closed = *store.lock_open_round("p", 0);
    write.closed.status = RoundStatus::kClosed;
    write.closed.closed_at = 11;
    write.population = population("p");
    write.population.current_round = 1;
    write.opened = round_record("p", 1);
    write.model = ModelRecord{"p", 1, "etag-1", "model-1"};
    store.close_round(write);
    tx.commit();
  }
  AcceptRequest into_1 = train_upload(old, "sha-old", 12);
  into_1.fold_round = 1;
  const AcceptOutcome accepted = accept(store, into_1);
  REQUIRE(accepted.status == AcceptStatus::kAccepted);
  CHECK(accepted.round.number == 1);
  CHECK(accepted.task.round == 0);  // the task keeps the round it was handed out on
  CHECK(store.find_round("p", 1)->reports == 1);
  CHECK(store.find_round("p", 0)->reports == 0);
  const std::vector<ResultRecord> results = store.list_results("p", 1, 0);
  REQUIRE(results.size() == 1);
  CHECK(results[0].task_id == old.task_id);
  CHECK(results[0].bytes == "result-sha-old");

  AcceptRequest into_0 = train_upload(later, "sha-later", 12);
  into_0.fold_round = 0;
  CHECK(accept(store, into_0).status == AcceptStatus::kRoundClosed);
  CHECK(store.find_task(later.task_id)->state == TaskState::kLeased);
}

// A buffered version's close reads its reports' staleness from its results' tasks: the results
// of a round counted by the round their task was handed out on, of that population only.
FEDLEAF_STORE_CASE(store_counts_a_rounds_results_by_their_tasks_round, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  create(store, "q");
  const ClaimedTask a = *claim(store, TaskKind::kTrain, 10);
  const ClaimedTask b = *claim(store, TaskKind::kTrain, 10, 5, "lease-2");
  const ClaimedTask c = *claim(store, TaskKind::kTrain, 10, 5, "lease-3");
  REQUIRE(accept(store, train_upload(a, "sha-a", 11)).status == AcceptStatus::kAccepted);
  CHECK(store.count_results_by_task_round("p", 0) == std::map<int, std::int64_t>{{0, 1}});
  close(store, 0, 12);  // drops round 0's results
  CHECK(store.count_results_by_task_round("p", 0).empty());
  ClaimedTask d;
  {
    StoreTransaction tx(store, Durability::kNormal);
    d = *store.claim_task({"p", 1, TaskKind::kTrain, 5, 13, 18, "lease-4"});
    tx.commit();
  }
  for (const auto& [task, sha] : {std::pair{b, "sha-b"}, {c, "sha-c"}, {d, "sha-d"}}) {
    AcceptRequest into_1 = train_upload(task, sha, 14);
    into_1.fold_round = 1;
    REQUIRE(accept(store, into_1).status == AcceptStatus::kAccepted);
  }
  CHECK(store.count_results_by_task_round("p", 1) == std::map<int, std::int64_t>{{0, 2}, {1, 1}});
  CHECK(store.count_results_by_task_round("q", 1).empty());
  CHECK(store.count_results_by_task_round("q", 0).empty());
}

FEDLEAF_STORE_CASE(store_rejections_are_counted_per_reason, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");

  StoreTransaction tx(store, Durability::kNormal);
  store.add_rejection({"p", "conflict"});
  store.add_rejection({"p", "conflict"});
  store.add_rejection({"p", "lease_expired"});
  tx.commit();

  const auto counts = store.rejections("p");
  CHECK(counts.at("conflict") == 2);
  CHECK(counts.at("lease_expired") == 1);
  CHECK(counts.size() == 2);
}

// A leaf whose answer was lost sends the same upload again: one refusal, counted once.
FEDLEAF_STORE_CASE(store_a_refused_upload_sent_again_under_its_lease_is_counted_once,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  const auto task = claim(store, TaskKind::kTrain, 0);
  REQUIRE(task);
  const std::vector<RefusedUpload> uploads = {{"p", "lease_expired", task->lease_id, "sha-a"},
                                              {"p", "lease_expired", task->lease_id, "sha-a"},
                                              {"p", "lease_expired", task->lease_id, "sha-b"},
                                              {"p", "forbidden"},
                                              {"p", "forbidden"}};

  std::vector<bool> counted;
  for (const RefusedUpload& upload : uploads) {
    StoreTransaction tx(store, Durability::kNormal);
    counted.push_back(store.add_rejection(upload));
    tx.commit();
  }

  CHECK(counted == std::vector<bool>{true, false, true, true, true});
  CHECK(store.rejections("p").at("lease_expired") == 2);
  CHECK(store.rejections("p").at("forbidden") == 2);
}

}  // namespace fedleaf::server
