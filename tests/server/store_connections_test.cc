// The Store suite (store_suite.h) on the shared backends: several connections to one store (what
// several servers do).
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
