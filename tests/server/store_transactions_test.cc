// The Store suite (store_suite.h), every backend: transactions, nested steps and their rollbacks,
// and the durable sync beside a writer.
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

using store_suite::create;
using store_suite::never_leased;
using store_suite::population;
using store_suite::round_record;

}  // namespace

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

}  // namespace fedleaf::server
