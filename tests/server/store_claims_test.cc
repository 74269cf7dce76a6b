// The Store suite (store_suite.h), every backend: tasks claimed, leases released and expired,
// the lease and task counts.
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
using store_suite::train_upload;

}  // namespace

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

}  // namespace fedleaf::server
