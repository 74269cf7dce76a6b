// The Store's combined reads (find_task_with_leases, find_progress) against the reads they
// combine, on every backend of store_backends.h; a second connection's reports are among the
// round's counters on the shared ones.
#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "server/store/store.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

RoundRecord round_record(const std::string& id, int number) {
  RoundRecord r;
  r.population_id = id;
  r.number = number;
  r.started_at = 100;
  r.deadline = 160;
  return r;
}

void create(Store& store, const std::string& id) {
  StoreTransaction tx(store, Durability::kFull);
  store.create_population(test::test_population_record(id, "{\"updates\": {}}"),
                          round_record(id, 0), {id, 0, "etag-0", "model-0"});
  tx.commit();
}

ClaimedTask claim(Store& store, double now, const std::string& hash, int limit = 5) {
  StoreTransaction tx(store, Durability::kNormal);
  std::optional<ClaimedTask> claimed =
      store.claim_task({"p", 0, TaskKind::kTrain, limit, now, now + 5, hash});
  tx.commit();
  REQUIRE(claimed);
  return *claimed;
}

void accept(Store& store, const ClaimedTask& task, double now, double examples) {
  AcceptRequest r;
  r.task_id = task.task_id;
  r.lease_id = task.lease_id;
  r.result_sha256 = "sha";
  r.now = now;
  r.train_bytes = "result";
  r.delta.examples = examples;
  r.delta.loss_sum = examples / 2;
  r.delta.upload_bytes = 6;
  r.receipt_body = [](int reports) { return std::to_string(reports); };
  StoreTransaction tx(store, Durability::kNormal);
  REQUIRE(store.accept_result(r).status == AcceptStatus::kAccepted);
  tx.commit();
}

}  // namespace

FEDLEAF_STORE_CASE(store_find_task_with_leases_is_the_task_and_its_leases_in_order,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  const ClaimedTask first = claim(store, 10, "hash-1", 1);  // the round's one task
  {  // the lease expires (at 15) and the task is leased again
    StoreTransaction tx(store, Durability::kNormal);
    std::optional<ClaimedTask> again =
        store.claim_task({"p", 0, TaskKind::kTrain, 1, 20, 25, "hash-2"});
    tx.commit();
    REQUIRE(again);
    REQUIRE(again->task_id == first.task_id);
  }

  const std::optional<TaskWithLeases> found = store.find_task_with_leases(first.task_id);

  REQUIRE(found);
  const std::optional<TaskRecord> task = store.find_task(first.task_id);
  REQUIRE(task);
  CHECK(found->task.id == task->id);
  CHECK(found->task.lease_id == task->lease_id);
  CHECK(found->task.lease_expires_at == task->lease_expires_at);
  CHECK(found->task.state == TaskState::kLeased);
  REQUIRE(found->leases.size() == 2);
  CHECK(found->leases[0].id == first.lease_id);
  CHECK(found->leases[0].token_hash == "hash-1");
  CHECK(found->leases[1].token_hash == "hash-2");
  CHECK(found->leases[1].expires_at == 25);
  CHECK(found->leases[1].task_id == first.task_id);
  CHECK_FALSE(store.find_task_with_leases(first.task_id + 1000));
}

FEDLEAF_STORE_CASE(store_find_task_with_leases_of_a_task_never_leased_has_none, PostgresBackend) {
  // PostgreSQL creates tasks a chunk at a time: the others of the chunk have no lease yet.
  create(store, "p");
  const ClaimedTask claimed = claim(store, 10, "hash-1");

  const std::optional<TaskWithLeases> found = store.find_task_with_leases(claimed.task_id + 1);

  REQUIRE(found);
  CHECK(found->task.lease_id == 0);
  CHECK(found->leases.empty());
}

FEDLEAF_STORE_CASE(store_find_progress_is_the_population_state_and_the_round_counters,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  accept(store, claim(store, 10, "hash-1"), 11, 4);
  accept(store, claim(store, 10, "hash-2"), 11, 6);

  const std::optional<PopulationProgress> progress = store.find_progress("p", 0);

  REQUIRE(progress);
  CHECK(progress->state == RunState::kRunning);
  CHECK(progress->current_round == 0);
  REQUIRE(progress->round);
  const std::optional<RoundRecord> round = store.find_round("p", 0);
  CHECK(progress->round->status == RoundStatus::kOpen);
  CHECK(progress->round->reports == 2);
  CHECK(progress->round->examples == 10);
  CHECK(progress->round->loss_sum == 5);
  CHECK(progress->round->upload_bytes == 12);
  CHECK(progress->round->train_tasks == round->train_tasks);
  CHECK(progress->round->deadline == 160);
  CHECK_FALSE(store.find_progress("p", 1)->round);
  CHECK(store.find_progress("p", 1)->current_round == 0);
  CHECK_FALSE(store.find_progress("q", 0));
}

FEDLEAF_STORE_CASE(store_find_progress_counts_every_connections_reports,
                   FEDLEAF_SHARED_STORE_BACKENDS) {
  create(store, "p");
  const std::unique_ptr<Store> other = backend.open();
  accept(store, claim(store, 10, "hash-1"), 11, 4);
  accept(*other, claim(*other, 10, "hash-2"), 11, 6);

  const std::optional<PopulationProgress> seen_here = store.find_progress("p", 0);
  const std::optional<PopulationProgress> seen_there = other->find_progress("p", 0);

  REQUIRE(seen_here);
  REQUIRE(seen_there);
  CHECK(seen_here->round->reports == 2);
  CHECK(seen_here->round->examples == 10);
  CHECK(seen_there->round->reports == 2);
}

}  // namespace fedleaf::server
