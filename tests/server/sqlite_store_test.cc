// SqliteStore-only cases: reopening a file, schema versions and migrations. The operations are
// the shared suite's (store_test.cc).
#include "server/store/sqlite_store.h"

#include <sqlite3.h>

#include <catch2/catch.hpp>

#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

void seed(Store& store) {
  PopulationRecord p;
  p.id = "p";
  p.plan_json = "{}";
  RoundRecord round0;
  round0.population_id = "p";
  StoreTransaction tx(store, Durability::kFull);
  store.create_population(p, round0, {"p", 0, "etag", "model"});
  tx.commit();
}

}  // namespace

TEST_CASE("sqlite_file_store_keeps_committed_state_across_reopen", "[store]") {
  SqliteFileBackend backend;
  {
    auto store = backend.open();
    seed(*store);
  }

  auto reopened = backend.open();

  CHECK(reopened->find_population("p"));
  CHECK(reopened->find_round("p", 0));
}

TEST_CASE("sqlite_store_rejects_database_of_another_schema_version", "[store]") {
  SqliteFileBackend backend;
  {
    SqliteStore store(backend.path);
    seed(store);
  }
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(backend.path.c_str(), &raw) == SQLITE_OK);
  REQUIRE(sqlite3_exec(raw, "UPDATE schema_version SET version = 99", nullptr, nullptr, nullptr) ==
          SQLITE_OK);
  sqlite3_close(raw);

  CHECK_THROWS_WITH(SqliteStore(backend.path), Catch::Contains("schema version 99"));
}

// A database written by a version 1 server (no robust_json column) opens: migrated to version
// 2 in one transaction, its rounds read with "{}" for the new field, and stays writable.
TEST_CASE("sqlite_store_migrates_a_version_1_database_and_keeps_its_rounds", "[store]") {
  SqliteFileBackend backend;
  {
    SqliteStore store(backend.path);
    seed(store);
  }
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(backend.path.c_str(), &raw) == SQLITE_OK);
  REQUIRE(sqlite3_exec(raw,
                       "ALTER TABLE rounds DROP COLUMN robust_json; "
                       "UPDATE schema_version SET version = 1",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);

  SqliteStore migrated(backend.path);

  const auto round = migrated.find_round("p", 0);
  REQUIRE(round);
  CHECK(round->robust_json == "{}");
  RoundCloseWrite close;
  close.closed = *round;
  close.closed.robust_json = R"({"capped":2})";
  close.population = *migrated.find_population("p");
  StoreTransaction tx(migrated, Durability::kFull);
  migrated.close_round(close);
  tx.commit();
  CHECK(migrated.find_round("p", 0)->robust_json == R"({"capped":2})");
  REQUIRE(sqlite3_open(backend.path.c_str(), &raw) == SQLITE_OK);
  sqlite3_stmt* version = nullptr;
  REQUIRE(sqlite3_prepare_v2(raw, "SELECT version FROM schema_version", -1, &version, nullptr) ==
          SQLITE_OK);
  REQUIRE(sqlite3_step(version) == SQLITE_ROW);
  CHECK(sqlite3_column_int(version, 0) == SqliteStore::kSchemaVersion);
  sqlite3_finalize(version);
  sqlite3_close(raw);
}

}  // namespace fedleaf::server
