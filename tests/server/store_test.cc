// The one Store suite, run unchanged on every backend of store_backends.h.
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

namespace fedleaf::server {
namespace {

PopulationRecord population(const std::string& id) {
  PopulationRecord p = test::test_population_record(id, "{\"updates\": {}}");
  p.settings.server_optimizer_json = R"({"learning_rate":0.5,"momentum":0.9,"type":"sgd"})";
  p.settings.buffered_json = R"({"buffer_size":2})";
  return p;
}

RoundRecord round_record(const std::string& id, int number) {
  RoundRecord r;
  r.population_id = id;
  r.number = number;
  r.started_at = 100 + number;
  r.deadline = 160 + number;
  return r;
}

void create(Store& store, const std::string& id) {
  StoreTransaction tx(store, Durability::kFull);
  store.create_population(population(id), round_record(id, 0), {id, 0, "etag-0", "model-0"});
  tx.commit();
}

// Claims a task of population "p", round 0, in a transaction of its own.
std::optional<ClaimedTask> claim(Store& store, TaskKind kind, double now, int limit = 5,
                                 const std::string& hash = "lease-hash") {
  StoreTransaction tx(store, Durability::kNormal);
  auto claimed = store.claim_task({"p", 0, kind, limit, now, now + 5, hash});
  tx.commit();
  return claimed;
}

AcceptRequest train_upload(const ClaimedTask& task, const std::string& sha, double now) {
  AcceptRequest r;
  r.task_id = task.task_id;
  r.lease_id = task.lease_id;
  r.result_sha256 = sha;
  r.now = now;
  r.train_bytes = "result-" + sha;
  r.delta.examples = 10;
  r.delta.loss_sum = 5;
  r.delta.accuracy_sum = 8;
  r.delta.accuracy_examples = 10;
  r.delta.upload_bytes = 100;
  r.receipt_body = [](int reports) { return "{\"reports\":" + std::to_string(reports) + "}"; };
  return r;
}

AcceptOutcome accept(Store& store, const AcceptRequest& request) {
  StoreTransaction tx(store, Durability::kNormal);
  AcceptOutcome outcome = store.accept_result(request);
  tx.commit();
  return outcome;
}

// A claim rolled back leaves no lease: its task is gone, or (a task PostgresStore created in a
// chunk, committed on its own) there and never leased.
bool never_leased(Store& store, std::int64_t task_id) {
  const std::optional<TaskRecord> task = store.find_task(task_id);
  return store.list_leases(task_id).empty() && (!task || task->lease_id == 0);
}

// Closes round `number` of "p" and opens the next with its model.
void close(Store& store, int number, double now) {
  StoreTransaction tx(store, Durability::kFull);
  std::optional<RoundRecord> locked = store.lock_open_round("p", number);
  REQUIRE(locked);
  RoundCloseWrite write;
  write.closed = *locked;
  write.closed.status = RoundStatus::kClosed;
  write.closed.closed_at = now;
  write.closed.robust_json = R"({"capped":1})";
  write.population = population("p");
  write.population.current_round = number + 1;
  write.opened = round_record("p", number + 1);
  write.model = ModelRecord{"p", number + 1, "etag-" + std::to_string(number + 1), "model"};
  store.close_round(write);
  tx.commit();
}

}  // namespace

FEDLEAF_STORE_CASE(store_create_population_then_find_returns_every_field, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");

  auto found = store.find_population("p");

  REQUIRE(found);
  const PopulationRecord expected = population("p");
  CHECK(found->plan_json == expected.plan_json);
  CHECK(found->client_token_hash == expected.client_token_hash);
  CHECK(found->settings.rounds == 3);
  CHECK(found->settings.clients_per_round == 4);
  CHECK(found->settings.min_reports == 2);
  CHECK(found->settings.round_deadline_s == 60);
  CHECK(found->settings.lease_s == 5);
  CHECK(found->settings.train_tasks_per_round == 5);
  CHECK(found->settings.eval_tasks_per_round == 1);
  CHECK(found->settings.server_optimizer_json == expected.settings.server_optimizer_json);
  CHECK(found->settings.buffered_json == expected.settings.buffered_json);
  CHECK(found->state == RunState::kRunning);
  CHECK(found->current_round == 0);
  CHECK(found->created_at == 100);
  CHECK(store.find_round("p", 0)->status == RoundStatus::kOpen);
  CHECK(store.find_round("p", 0)->deadline == 160);
  CHECK(store.find_model("p", 0)->bytes == "model-0");
  CHECK(store.find_model("p", 0)->etag == "etag-0");
  CHECK_FALSE(store.find_population("q"));
  CHECK_FALSE(store.find_model("p", 1));
}

FEDLEAF_STORE_CASE(store_create_population_twice_is_conflict, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");

  StoreTransaction tx(store, Durability::kNormal);
  CHECK_THROWS_AS(
      store.create_population(population("p"), round_record("p", 0), {"p", 0, "e", "m"}), Conflict);
}

FEDLEAF_STORE_CASE(store_list_populations_is_ordered_by_id, FEDLEAF_STORE_BACKENDS) {
  create(store, "b");
  create(store, "a");

  auto all = store.list_populations();

  REQUIRE(all.size() == 2);
  CHECK(all[0].id == "a");
  CHECK(all[1].id == "b");
}

FEDLEAF_STORE_CASE(store_claim_task_creates_tasks_up_to_the_limit_and_counts_them,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");

  auto first = claim(store, TaskKind::kTrain, 10, 2);
  auto second = claim(store, TaskKind::kTrain, 10, 2);
  auto third = claim(store, TaskKind::kTrain, 10, 2);
  auto eval = claim(store, TaskKind::kEvaluate, 10, 1);

  REQUIRE(first);
  REQUIRE(second);
  CHECK_FALSE(third);
  REQUIRE(eval);
  CHECK(first->task_id < second->task_id);
  CHECK(store.find_round("p", 0)->train_tasks == 2);
  CHECK(store.find_round("p", 0)->eval_tasks == 1);
  const TaskRecord task = *store.find_task(first->task_id);
  CHECK(task.population_id == "p");
  CHECK(task.round == 0);
  CHECK(task.kind == TaskKind::kTrain);
  CHECK(task.state == TaskState::kLeased);
  CHECK(task.lease_id == first->lease_id);
  CHECK(task.lease_expires_at == 15);
  CHECK(store.find_task(eval->task_id)->kind == TaskKind::kEvaluate);
  CHECK(store.list_leases(first->task_id).at(0).token_hash == "lease-hash");
  CHECK_FALSE(store.find_task(9999));
}

FEDLEAF_STORE_CASE(store_claim_task_releases_the_earliest_expired_lease_first,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  auto early = claim(store, TaskKind::kTrain, 10, 3);  // expires at 15
  auto late = claim(store, TaskKind::kTrain, 12, 3);   // expires at 17
  claim(store, TaskKind::kTrain, 14, 3);               // expires at 19

  auto first = claim(store, TaskKind::kTrain, 18, 3, "second-hash");
  auto second = claim(store, TaskKind::kTrain, 18, 3);
  auto none = claim(store, TaskKind::kTrain, 18, 3);

  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->task_id == early->task_id);
  CHECK(first->lease_id != early->lease_id);
  CHECK(second->task_id == late->task_id);
  CHECK_FALSE(none);
  const auto leases = store.list_leases(early->task_id);
  REQUIRE(leases.size() == 2);
  CHECK(leases[0].id == early->lease_id);
  CHECK(leases[1].id == first->lease_id);
  CHECK(leases[1].token_hash == "second-hash");
  CHECK(leases[1].expires_at == 23);
  CHECK(store.find_round("p", 0)->train_tasks == 3);
}

FEDLEAF_STORE_CASE(store_release_lease_makes_the_task_leasable_at_once_only_for_its_lease,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  auto released = *claim(store, TaskKind::kTrain, 10, 1);  // expires at 15
  const auto release = [&](const ClaimedTask& task, std::int64_t lease_id, double now) {
    StoreTransaction tx(store, Durability::kNormal);
    store.release_lease(task.task_id, lease_id, now);
    tx.commit();
  };

  release(released, released.lease_id + 1000, 11);  // not its lease: nothing
  CHECK_FALSE(claim(store, TaskKind::kTrain, 11, 1));
  release(released, released.lease_id, 11);
  auto again = claim(store, TaskKind::kTrain, 11, 1, "second-hash");

  REQUIRE(again);
  CHECK(again->task_id == released.task_id);
  CHECK(accept(store, train_upload(released, "sha", 11)).status == AcceptStatus::kLeasedAgain);
  release(released, released.lease_id, 12);  // not the current lease any more: nothing
  CHECK(store.find_task(again->task_id)->lease_expires_at == 16);
  CHECK(accept(store, train_upload(*again, "sha", 12)).status == AcceptStatus::kAccepted);
  release(*again, again->lease_id, 13);  // done: nothing
  CHECK(store.find_task(again->task_id)->state == TaskState::kDone);
}

FEDLEAF_STORE_CASE(store_claim_task_finds_nothing_in_a_closed_round, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  claim(store, TaskKind::kTrain, 10, 1);
  close(store, 0, 11);

  CHECK_FALSE(claim(store, TaskKind::kTrain, 12, 5));
  CHECK_FALSE(claim(store, TaskKind::kTrain, 100, 1));  // even its expired task
}

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

FEDLEAF_STORE_CASE(store_close_round_writes_the_close_once_and_drops_its_results,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  auto a = *claim(store, TaskKind::kTrain, 10);
  accept(store, train_upload(a, "sha-a", 11));
  {
    StoreTransaction tx(store, Durability::kNormal);
    store.put_checkpoint({"p", 0, 1, "ckpt"});
    tx.commit();
  }

  close(store, 0, 20);

  const RoundRecord closed = *store.find_round("p", 0);
  CHECK(closed.status == RoundStatus::kClosed);
  CHECK(closed.closed_at == 20);
  CHECK(closed.robust_json == R"({"capped":1})");
  CHECK(closed.reports == 1);
  CHECK(store.find_round("p", 1)->status == RoundStatus::kOpen);
  CHECK(store.find_model("p", 1)->etag == "etag-1");
  CHECK(store.find_population("p")->current_round == 1);
  CHECK(store.list_results("p", 0, 0).empty());
  CHECK_FALSE(store.find_checkpoint("p", 0));
  const auto rounds = store.list_rounds("p");
  REQUIRE(rounds.size() == 2);
  CHECK(rounds[0].number == 0);
  CHECK(rounds[1].number == 1);
  StoreTransaction tx(store, Durability::kNormal);
  CHECK_FALSE(store.lock_open_round("p", 0));
  RoundCloseWrite again;
  again.closed = closed;
  again.population = population("p");
  CHECK_THROWS_AS(store.close_round(again), Conflict);
}

// A close stores the optimizer's state with its model, in its transaction, and keeps only the
// latest: the next close reads the state the previous one wrote.
FEDLEAF_STORE_CASE(store_close_round_keeps_the_latest_optimizer_state_with_its_model,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  CHECK_FALSE(store.find_optimizer_state("p", 0));  // a new population starts from zeros
  const auto close_with_state = [&](int number, const std::string& bytes, bool commit) {
    StoreTransaction tx(store, Durability::kFull);
    REQUIRE(store.lock_open_round("p", number));
    RoundCloseWrite write;
    write.closed = *store.find_round("p", number);
    write.population = population("p");
    write.population.current_round = number + 1;
    write.opened = round_record("p", number + 1);
    write.model = ModelRecord{"p", number + 1, "etag-" + std::to_string(number + 1), "model"};
    write.optimizer_state =
        OptimizerStateRecord{"p", number + 1, "etag-state-" + std::to_string(number + 1), bytes};
    store.close_round(write);
    if (commit) tx.commit();
  };

  close_with_state(0, std::string("state\0one", 9), true);
  CHECK(store.find_optimizer_state("p", 1)->bytes == std::string("state\0one", 9));
  close_with_state(1, "state-two", false);  // rolled back: the state stays round 1's
  CHECK(store.find_optimizer_state("p", 1)->bytes == std::string("state\0one", 9));
  CHECK_FALSE(store.find_optimizer_state("p", 2));
  close_with_state(1, "state-two", true);

  CHECK(store.find_optimizer_state("p", 2)->bytes == "state-two");
  CHECK(store.find_optimizer_state("p", 2)->etag == "etag-state-2");
  CHECK_FALSE(store.find_optimizer_state("p", 1));
}

FEDLEAF_STORE_CASE(store_close_round_without_a_next_round_finishes_the_population,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");

  {
    StoreTransaction tx(store, Durability::kFull);
    RoundCloseWrite write;
    write.closed = *store.lock_open_round("p", 0);
    write.closed.status = RoundStatus::kClosed;
    write.closed.closed_at = 30;
    write.population = population("p");
    write.population.state = RunState::kFinished;
    store.close_round(write);
    tx.commit();
  }

  CHECK(store.find_population("p")->state == RunState::kFinished);
  CHECK(store.list_rounds("p").size() == 1);
  CHECK_FALSE(store.find_model("p", 1));
}

FEDLEAF_STORE_CASE(store_lease_queries_ignore_expired_and_done_tasks, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  auto done = *claim(store, TaskKind::kTrain, 10);  // expires at 15
  accept(store, train_upload(done, "sha", 11));
  claim(store, TaskKind::kTrain, 12);        // 17
  claim(store, TaskKind::kEvaluate, 14, 1);  // 19

  CHECK(store.next_lease_expiry("p", 0, 12) == 17);
  CHECK(store.next_lease_expiry("p", 0, 17) == 19);
  CHECK_FALSE(store.next_lease_expiry("p", 0, 19));
  CHECK(store.count_active_leases(12) == 2);
  CHECK(store.count_active_leases(18) == 1);
  CHECK_FALSE(store.has_expired_lease("p", 0, 16));
  CHECK(store.has_expired_lease("p", 0, 17));
}

FEDLEAF_STORE_CASE(store_counts_a_populations_tasks_out_of_every_round, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  create(store, "q");
  auto done = *claim(store, TaskKind::kTrain, 10);  // expires at 15
  accept(store, train_upload(done, "sha", 11));
  claim(store, TaskKind::kTrain, 12);        // 17
  claim(store, TaskKind::kTrain, 13);        // 18
  claim(store, TaskKind::kEvaluate, 14, 1);  // 19
  {
    StoreTransaction tx(store, Durability::kNormal);
    REQUIRE(store.claim_task({"q", 0, TaskKind::kTrain, 5, 12, 30, "lease-q"}));
    tx.commit();
  }

  CHECK(store.count_out_tasks("p", TaskKind::kTrain, 12) == 2);  // not the done one, nor q's
  CHECK(store.count_out_tasks("p", TaskKind::kTrain, 17) == 1);  // the first expired at 17
  CHECK(store.count_out_tasks("p", TaskKind::kEvaluate, 12) == 1);
  CHECK(store.count_out_tasks("q", TaskKind::kTrain, 12) == 1);
  CHECK(store.count_out_tasks("r", TaskKind::kTrain, 12) == 0);
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

FEDLEAF_STORE_CASE(store_has_leasable_task_sees_tasks_never_leased_and_expired_leases,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  claim(store, TaskKind::kTrain, 10, 3);  // expires at 15

  // A store that created more tasks than it leased (PostgreSQL's chunk) has one to lease.
  const bool created_more = store.find_round("p", 0)->train_tasks > 1;
  CHECK(store.has_leasable_task("p", 0, 11) == created_more);
  CHECK_FALSE(store.has_expired_lease("p", 0, 11));
  CHECK(store.has_leasable_task("p", 0, 15));
  CHECK(store.has_expired_lease("p", 0, 15));
}

FEDLEAF_STORE_CASE(store_checkpoint_is_replaced_and_found, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");

  StoreTransaction tx(store, Durability::kNormal);
  store.put_checkpoint({"p", 0, 3, "first"});
  store.put_checkpoint({"p", 0, 7, std::string("second\0bytes", 12)});
  tx.commit();

  const auto found = store.find_checkpoint("p", 0);
  REQUIRE(found);
  CHECK(found->seq == 7);
  CHECK(found->bytes == std::string("second\0bytes", 12));
  CHECK_FALSE(store.find_checkpoint("p", 1));
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

FEDLEAF_STORE_CASE(store_transaction_without_commit_leaves_no_trace, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");

  std::optional<ClaimedTask> claimed;
  {
    StoreTransaction tx(store, Durability::kFull);
    store.create_population(population("q"), round_record("q", 0), {"q", 0, "e", "m"});
    claimed = store.claim_task({"p", 0, TaskKind::kTrain, 5, 0, 10, "h"});
  }

  CHECK_FALSE(store.find_population("q"));
  CHECK(store.count_active_leases(0) == 0);
  REQUIRE(claimed);
  CHECK(never_leased(store, claimed->task_id));
}

FEDLEAF_STORE_CASE(store_nested_rollback_undoes_only_its_step, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  std::optional<ClaimedTask> claimed;

  {
    StoreTransaction tx(store, Durability::kNormal);
    store.begin_nested();
    store.add_rejection({"p", "forbidden"});
    store.commit_nested();
    store.begin_nested();
    claimed = store.claim_task({"p", 0, TaskKind::kTrain, 5, 0, 10, "h"});
    store.rollback_nested();
    store.begin_nested();
    store.add_rejection({"p", "conflict"});
    store.commit_nested();
    tx.commit();
  }

  CHECK(store.rejections("p").at("forbidden") == 1);
  CHECK(store.rejections("p").at("conflict") == 1);
  REQUIRE(claimed);
  CHECK(never_leased(store, claimed->task_id));
}

FEDLEAF_STORE_CASE(store_a_failed_step_rolls_back_and_the_transaction_goes_on,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");

  {
    StoreTransaction tx(store, Durability::kNormal);
    store.begin_nested();
    CHECK_THROWS_AS(
        store.create_population(population("p"), round_record("p", 0), {"p", 0, "e", "m"}),
        Conflict);
    store.rollback_nested();
    store.begin_nested();
    store.add_rejection({"p", "conflict"});
    store.commit_nested();
    tx.commit();
  }

  CHECK(store.rejections("p").at("conflict") == 1);
}

FEDLEAF_STORE_CASE(store_nested_steps_vanish_with_their_rolled_back_transaction,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");

  {
    StoreTransaction tx(store, Durability::kNormal);
    store.begin_nested();
    store.add_rejection({"p", "conflict"});
    store.commit_nested();
  }

  CHECK(store.rejections("p").empty());
  CHECK(store.find_population("p"));
}

FEDLEAF_STORE_CASE(store_sync_runs_beside_a_writer_and_keeps_every_commit, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  std::atomic<bool> writing{true};
  int syncs = 0;
  std::thread syncer([&] {
    do {
      store.sync();
      ++syncs;
    } while (writing);
  });

  for (int i = 0; i < 30; ++i) {
    StoreTransaction tx(store, Durability::kNormal);
    store.add_rejection({"p", "conflict"});
    tx.commit();
  }
  writing = false;
  syncer.join();
  store.sync();

  CHECK(syncs >= 1);
  CHECK(store.rejections("p").at("conflict") == 30);
}

// ---- several connections to one store (what several servers do)

FEDLEAF_STORE_CASE(store_commits_are_seen_by_another_connection_once_committed,
                   FEDLEAF_SHARED_STORE_BACKENDS) {
  Store& writer = store;
  create(writer, "p");
  auto reader = backend.open();

  writer.begin(Durability::kNormal);
  writer.begin_nested();
  writer.add_rejection({"p", "conflict"});
  writer.commit_nested();
  const bool seen_before_commit = !reader->rejections("p").empty();
  writer.commit();
  writer.sync();

  CHECK_FALSE(seen_before_commit);
  CHECK(reader->rejections("p").at("conflict") == 1);
}

FEDLEAF_STORE_CASE(store_concurrent_claims_on_two_connections_never_share_a_task,
                   FEDLEAF_SHARED_STORE_BACKENDS) {
  Store& first = store;
  create(first, "p");
  auto second = backend.open();
  constexpr int kTasks = 40;
  std::vector<std::int64_t> ids[2];
  auto run = [&](Store& store, std::vector<std::int64_t>& out) {
    for (;;) {
      auto claimed = claim(store, TaskKind::kTrain, 10, kTasks);
      if (!claimed) return;
      out.push_back(claimed->task_id);
    }
  };

  std::thread a([&] { run(first, ids[0]); });
  std::thread b([&] { run(*second, ids[1]); });
  a.join();
  b.join();

  std::vector<std::int64_t> all = ids[0];
  all.insert(all.end(), ids[1].begin(), ids[1].end());
  std::sort(all.begin(), all.end());
  CHECK(all.size() == kTasks);
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  CHECK(first.find_round("p", 0)->train_tasks == kTasks);
}

FEDLEAF_STORE_CASE(store_two_connections_closing_one_round_close_it_once,
                   FEDLEAF_SHARED_STORE_BACKENDS) {
  Store& first = store;
  create(first, "p");
  auto second = backend.open();
  std::atomic<int> closes{0};
  auto run = [&](Store& store) {
    StoreTransaction tx(store, Durability::kFull);
    std::optional<RoundRecord> locked = store.lock_open_round("p", 0);
    if (!locked) return;
    RoundCloseWrite write;
    write.closed = *locked;
    write.closed.status = RoundStatus::kClosed;
    write.population = population("p");
    write.population.current_round = 1;
    write.opened = round_record("p", 1);
    write.model = ModelRecord{"p", 1, "etag-1", "model"};
    store.close_round(write);
    tx.commit();
    ++closes;
  };

  std::thread a([&] { run(first); });
  std::thread b([&] { run(*second); });
  a.join();
  b.join();

  CHECK(closes == 1);
  CHECK(first.find_population("p")->current_round == 1);
}

FEDLEAF_STORE_CASE(store_a_closer_waits_for_an_accept_in_flight_on_another_connection_and_counts_it,
                   FEDLEAF_SHARED_STORE_BACKENDS) {
  Store& accepter = store;
  create(accepter, "p");
  auto closer = backend.open();
  const ClaimedTask task = *claim(accepter, TaskKind::kTrain, 10);

  StoreTransaction in_flight(accepter, Durability::kNormal);  // accepted, not yet committed
  REQUIRE(accepter.accept_result(train_upload(task, "sha", 11)).status == AcceptStatus::kAccepted);
  std::optional<RoundRecord> locked;
  std::thread close_it([&] {
    StoreTransaction tx(*closer, Durability::kFull);
    locked = closer->lock_open_round("p", 0);  // waits for the accept's commit
    tx.commit();
  });
  in_flight.commit();
  close_it.join();

  REQUIRE(locked);
  CHECK(locked->reports == 1);
  CHECK(locked->examples == 10);
}

FEDLEAF_STORE_CASE(store_an_accept_on_another_connection_while_a_round_closes_sees_it_closed,
                   FEDLEAF_SHARED_STORE_BACKENDS) {
  Store& accepter = store;
  create(accepter, "p");
  auto closer = backend.open();
  const ClaimedTask first = *claim(accepter, TaskKind::kTrain, 10);
  const ClaimedTask late = *claim(accepter, TaskKind::kTrain, 10);
  accept(accepter, train_upload(first, "sha-1", 11));  // the accepter's shard row exists

  StoreTransaction closing(*closer, Durability::kFull);
  std::optional<RoundRecord> locked = closer->lock_open_round("p", 0);
  REQUIRE(locked);
  std::optional<AcceptOutcome> outcome;
  std::thread upload([&] { outcome = accept(accepter, train_upload(late, "sha-2", 12)); });
  RoundCloseWrite write;
  write.closed = *locked;
  write.closed.closed_at = 12;
  write.population = population("p");
  write.population.current_round = 1;
  write.opened = round_record("p", 1);
  write.model = ModelRecord{"p", 1, "etag-1", "model"};
  closer->close_round(write);
  closing.commit();
  upload.join();

  REQUIRE(outcome);
  CHECK(outcome->status == AcceptStatus::kRoundClosed);
  const RoundRecord closed = *accepter.find_round("p", 0);
  CHECK(closed.status == RoundStatus::kClosed);
  CHECK(closed.reports == 1);
  CHECK(accepter.list_results("p", 0, 0).empty());
}

FEDLEAF_STORE_CASE(store_drop_models_drops_rows_below_the_round_except_a_validly_leased_rounds,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  REQUIRE(claim(store, TaskKind::kTrain, 10));  // round 0's lease holds until 15
  close(store, 0, 11);
  close(store, 1, 12);
  {
    StoreTransaction tx(store, Durability::kFull);
    CHECK(store.drop_models("p", 2, 12) == std::vector<int>{1});
    CHECK(store.drop_models("other", 2, 12).empty());
    tx.commit();
  }
  CHECK(store.find_model("p", 0));
  CHECK_FALSE(store.find_model("p", 1));
  CHECK(store.find_model("p", 2)->etag == "etag-2");
  {
    StoreTransaction rolled_back(store, Durability::kFull);
    CHECK(store.drop_models("p", 2, 15) == std::vector<int>{0});
  }
  CHECK(store.find_model("p", 0));
  StoreTransaction tx(store, Durability::kFull);
  CHECK(store.drop_models("p", 2, 15) == std::vector<int>{0});
  tx.commit();
  CHECK_FALSE(store.find_model("p", 0));
  CHECK(store.find_model("p", 2)->etag == "etag-2");
}

FEDLEAF_STORE_CASE(store_close_round_without_drop_results_keeps_them_for_drop_results,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  accept(store, train_upload(*claim(store, TaskKind::kTrain, 10), "sha-a", 11));
  {
    StoreTransaction tx(store, Durability::kFull);
    RoundCloseWrite write;
    write.closed = *store.lock_open_round("p", 0);
    write.closed.status = RoundStatus::kClosed;
    write.population = population("p");
    write.population.current_round = 1;
    write.opened = round_record("p", 1);
    write.model = ModelRecord{"p", 1, "etag-1", "model"};
    write.drop_results = false;
    store.close_round(write);
    tx.commit();
  }
  REQUIRE(store.list_results("p", 0, 0).size() == 1);
  {
    StoreTransaction tx(store, Durability::kFull);
    store.drop_results("p", 0);
    tx.commit();
  }
  CHECK(store.list_results("p", 0, 0).empty());
  CHECK(store.find_round("p", 0)->status == RoundStatus::kClosed);
}

// The retry of a refused upload goes to another server: it finds the upload counted.
FEDLEAF_STORE_CASE(store_a_refused_upload_counted_by_one_connection_is_not_counted_by_another,
                   FEDLEAF_SHARED_STORE_BACKENDS) {
  Store& first = store;
  create(first, "p");
  auto second = backend.open();
  const auto task = claim(first, TaskKind::kTrain, 0);
  REQUIRE(task);
  const RefusedUpload upload{"p", "round_closed", task->lease_id, "sha-a"};

  bool counted_first = false;
  {
    StoreTransaction tx(first, Durability::kNormal);
    counted_first = first.add_rejection(upload);
    tx.commit();
  }
  StoreTransaction tx(*second, Durability::kNormal);
  const bool counted_second = second->add_rejection(upload);
  tx.commit();

  CHECK(counted_first);
  CHECK_FALSE(counted_second);
  CHECK(second->rejections("p").at("round_closed") == 1);
}

}  // namespace fedleaf::server
