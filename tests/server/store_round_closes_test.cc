// The Store suite (store_suite.h), every backend: round closes, the optimizer state and the
// checkpoints they keep.
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

}  // namespace fedleaf::server
