// The Store suite (store_suite.h), every backend: an operator's pause (set_paused: claim_task
// leases nothing while it holds, on every connection to the store) and finish reason
// (set_finish_reason), kept in the population's row; databases of the previous schema version
// are migrated (their populations running, not paused, without a reason, their client token
// token 0 of client_tokens).
#include <libpq-fe.h>
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <string>

#include "server/store/store.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"
#include "tests/server/store_suite.h"

namespace fedleaf::server {
namespace {

using store_suite::claim;
using store_suite::create;

bool set_paused(Store& store, const std::string& id, bool paused) {
  StoreTransaction tx(store, Durability::kFull);
  const bool changed = store.set_paused(id, paused);
  tx.commit();
  return changed;
}

// Finishes "p" as PopulationControl does: its round 0 closed, the population finished, a reason.
void finish(Store& store, const std::string& reason) {
  StoreTransaction tx(store, Durability::kFull);
  RoundCloseWrite close;
  close.closed = *store.lock_open_round("p", 0);
  close.closed.closed_at = 150;
  close.population = *store.find_population("p");
  close.population.state = RunState::kFinished;
  store.close_round(close);
  store.set_finish_reason("p", reason);
  tx.commit();
}

}  // namespace

FEDLEAF_STORE_CASE(store_a_paused_population_leases_no_task_until_resumed, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  REQUIRE(claim(store, TaskKind::kTrain, 100));

  CHECK(set_paused(store, "p", true));

  CHECK(store.find_population("p")->paused);
  CHECK(store.find_progress("p", 0)->paused);
  CHECK_FALSE(claim(store, TaskKind::kTrain, 101));
  CHECK_FALSE(claim(store, TaskKind::kEvaluate, 101));
  CHECK_FALSE(claim(store, TaskKind::kTrain, 200));  // an expired lease is not handed out either
  CHECK_FALSE(set_paused(store, "p", true));         // paused already: nothing changes
  CHECK(store.find_population("p")->paused);

  CHECK(set_paused(store, "p", false));

  CHECK_FALSE(store.find_population("p")->paused);
  CHECK_FALSE(store.find_progress("p", 0)->paused);
  CHECK(claim(store, TaskKind::kTrain, 101));
  CHECK_FALSE(set_paused(store, "p", false));  // running already
}

FEDLEAF_STORE_CASE(store_a_pause_holds_on_every_connection_to_a_shared_store,
                   FEDLEAF_STORE_BACKENDS) {
  if (!TestType::kShared) return;
  create(store, "p");
  auto other = backend.open();
  CHECK(set_paused(*other, "p", true));

  CHECK_FALSE(claim(store, TaskKind::kTrain, 100));
  CHECK(store.find_progress("p", 0)->paused);

  CHECK(set_paused(*other, "p", false));
  CHECK(claim(store, TaskKind::kTrain, 100));
}

FEDLEAF_STORE_CASE(store_pausing_an_unknown_population_is_not_found, FEDLEAF_STORE_BACKENDS) {
  StoreTransaction tx(store, Durability::kFull);
  CHECK_THROWS_AS(store.set_paused("nope", true), NotFound);
  CHECK_THROWS_AS(store.set_finish_reason("nope", "why"), NotFound);
}

FEDLEAF_STORE_CASE(store_a_finished_population_keeps_its_reason_and_cannot_be_paused,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  REQUIRE(set_paused(store, "p", true));

  finish(store, "accuracy reached 0.9");

  const PopulationRecord found = *store.find_population("p");
  CHECK(found.state == RunState::kFinished);
  CHECK(found.finish_reason == "accuracy reached 0.9");
  CHECK_FALSE(found.paused);  // a finish ends the pause
  CHECK_FALSE(set_paused(store, "p", true));
  CHECK_FALSE(store.find_population("p")->paused);
  CHECK(store.find_round("p", 0)->status == RoundStatus::kClosed);
}

// A version 7 database (no pause, no reason): migrated, its populations run, and a pause holds.
TEST_CASE("sqlite_store_migrates_a_version_7_database_and_pauses_its_populations", "[store]") {
  SqliteFileBackend backend;
  {
    SqliteStore store(backend.path);
    create(store, "p");
  }
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(backend.path.c_str(), &raw) == SQLITE_OK);
  REQUIRE(
      sqlite3_exec(raw,
                   "ALTER TABLE populations DROP COLUMN privacy; "
                   "ALTER TABLE populations DROP COLUMN privacy_secret; "
                   "ALTER TABLE populations DROP COLUMN paused; "
                   "ALTER TABLE populations DROP COLUMN finish_reason; "
                   "ALTER TABLE populations DROP COLUMN tokens_epoch; DROP TABLE client_tokens; "
                   "DROP TABLE devices; "
                   "UPDATE schema_version SET version = 7",
                   nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);

  SqliteStore migrated(backend.path);
  const PopulationRecord found = *migrated.find_population("p");
  CHECK_FALSE(found.paused);
  CHECK(found.finish_reason.empty());
  // Its client token is token 0, live.
  REQUIRE(migrated.list_client_tokens("p").size() == 1);
  CHECK(migrated.list_client_tokens("p")[0].token_hash == found.client_token_hash);
  CHECK(migrated.list_client_tokens("p")[0].revoked_at == 0);
  REQUIRE(set_paused(migrated, "p", true));
  CHECK_FALSE(claim(migrated, TaskKind::kTrain, 100));
}

TEST_CASE("postgres_a_version_8_database_is_migrated_and_pauses_its_populations",
          "[store][postgres]") {
  PostgresBackend backend;
  {
    const std::unique_ptr<Store> first = backend.open();
    if (!first) return;
    create(*first, "p");
  }
  pg_conn* admin = PQconnectdb(backend.url().c_str());
  pg_result* r = PQexec(admin,
                        "ALTER TABLE populations DROP COLUMN paused; ALTER TABLE populations DROP "
                        "COLUMN finish_reason; ALTER TABLE populations DROP COLUMN tokens_epoch; "
                        "DROP TABLE client_tokens; UPDATE schema_version SET version = 8");
  REQUIRE(PQresultStatus(r) == PGRES_COMMAND_OK);
  PQclear(r);

  const std::unique_ptr<Store> migrated = backend.open();
  r = PQexec(admin, "SELECT version FROM schema_version");
  CHECK(std::string(PQgetvalue(r, 0, 0)) == std::to_string(PostgresStore::kSchemaVersion));
  PQclear(r);
  PQfinish(admin);
  const PopulationRecord found = *migrated->find_population("p");
  CHECK_FALSE(found.paused);
  CHECK(found.finish_reason.empty());
  REQUIRE(migrated->list_client_tokens("p").size() == 1);
  CHECK(migrated->list_client_tokens("p")[0].token_hash == found.client_token_hash);
  REQUIRE(set_paused(*migrated, "p", true));
  CHECK_FALSE(claim(*migrated, TaskKind::kTrain, 100));
}

}  // namespace fedleaf::server
