// The Store suite (store_suite.h), every backend: populations created, found and listed.
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
using store_suite::population;
using store_suite::round_record;

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

}  // namespace fedleaf::server
