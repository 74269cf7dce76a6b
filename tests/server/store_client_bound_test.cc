// Store::claim_task under a client bound (ClaimRequest::max_client_tasks): a key holding that many
// tasks of a population (lease valid) gets none, on every backend and across connections — on
// PostgreSQL a claim of the key waits for another connection's uncommitted claim of it and then
// counts it — and Store::count_client_tasks counts what the bound counts. Databases of the
// previous schema version are migrated (their leases hold no key, their populations no bound).
#include <libpq-fe.h>
#include <sqlite3.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

void create(Store& store, const std::string& id) {
  StoreTransaction tx(store, Durability::kFull);
  RoundRecord round0;
  round0.population_id = id;
  store.create_population(test::test_population_record(id), round0, {id, 0, "etag", "model"});
  tx.commit();
}

// A train task of round 0 of `id` (5 a round) leased at `now` for 10 s to `key` under `bound`.
std::optional<ClaimedTask> claim(Store& store, const std::string& id, const std::string& key,
                                 int bound, double now, const std::string& lease) {
  return store.claim_task({id, 0, TaskKind::kTrain, 5, now, now + 10, lease, key, bound});
}

std::optional<ClaimedTask> claim_committed(Store& store, const std::string& id,
                                           const std::string& key, int bound, double now,
                                           const std::string& lease) {
  StoreTransaction tx(store, Durability::kNormal);
  std::optional<ClaimedTask> claimed = claim(store, id, key, bound, now, lease);
  tx.commit();
  return claimed;
}

}  // namespace

FEDLEAF_STORE_CASE(store_a_claim_past_its_clients_bound_leases_nothing, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  create(store, "q");
  const auto a = claim_committed(store, "p", "k", 2, 100, "l1");
  const auto b = claim_committed(store, "p", "k", 2, 100, "l2");
  REQUIRE(a);
  REQUIRE(b);
  CHECK_FALSE(claim_committed(store, "p", "k", 2, 100, "l3"));  // k holds 2 of p's
  CHECK(claim_committed(store, "p", "other", 2, 100, "l4"));    // another key
  CHECK(claim_committed(store, "q", "k", 2, 100, "l5"));        // another population

  const ClientTasks held = store.count_client_tasks("p", "k", 100);
  CHECK(held.held == 2);
  CHECK(held.next_expiry == 110);
  // A task given back (or reported, or expired) is no longer held.
  {
    StoreTransaction tx(store, Durability::kNormal);
    store.release_lease(a->task_id, a->lease_id, 101);
    tx.commit();
  }
  CHECK(store.count_client_tasks("p", "k", 101).held == 1);
  CHECK(claim_committed(store, "p", "k", 2, 101, "l6"));
  CHECK(store.count_client_tasks("p", "k", 111).held == 0);  // every lease expired
  // Without a bound nothing is kept under the key: it holds nothing.
  CHECK(claim_committed(store, "q", "free", 0, 100, "l7"));
  CHECK(store.count_client_tasks("q", "free", 100).held == 0);
}

FEDLEAF_STORE_CASE(store_a_clients_bound_holds_across_connections, FEDLEAF_SHARED_STORE_BACKENDS) {
  create(store, "p");
  const std::unique_ptr<Store> other = backend.open();
  REQUIRE(claim_committed(store, "p", "k", 2, 100, "l1"));
  REQUIRE(claim_committed(*other, "p", "k", 2, 100, "l2"));
  CHECK_FALSE(claim_committed(store, "p", "k", 2, 100, "l3"));
  CHECK_FALSE(claim_committed(*other, "p", "k", 2, 100, "l4"));
}

// Server A's claim of the key is not committed yet (its batch is open) when server B claims for
// the same key: B waits for A's transaction and then counts A's lease. Without the wait, B would
// not see A's uncommitted lease and lease a second task past the bound of 1.
TEST_CASE("postgres_a_claim_waits_for_another_servers_uncommitted_claim_of_its_client",
          "[store][postgres]") {
  PostgresBackend backend;
  const std::unique_ptr<Store> a = backend.open();
  if (!a) return;
  const std::unique_ptr<Store> b = backend.open();
  create(*a, "p");
  a->begin(Durability::kNormal);
  REQUIRE(claim(*a, "p", "k", 1, 100, "l1"));

  std::atomic<bool> done{false};
  std::optional<ClaimedTask> claimed_by_b;
  std::thread server_b([&] {
    claimed_by_b = claim_committed(*b, "p", "k", 1, 100, "l2");
    done = true;
  });
  // Until B waits for A's lock (a bound for a broken wait, 30 s; not a timing).
  pg_conn* watcher = PQconnectdb(backend.url().c_str());
  for (int i = 0; i < 600 && !done; ++i) {
    pg_result* r = PQexec(watcher,
                          "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                          "AND wait_event = 'advisory'");
    const bool waiting =
        PQresultStatus(r) == PGRES_TUPLES_OK && std::string(PQgetvalue(r, 0, 0)) != "0";
    PQclear(r);
    if (waiting) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  PQfinish(watcher);
  CHECK_FALSE(done);  // B is waiting for A
  a->commit();
  server_b.join();
  CHECK_FALSE(claimed_by_b);
  CHECK(a->count_client_tasks("p", "k", 100).held == 1);
}

// A version 6 database (no bound, no client keys): migrated, its populations have no bound, its
// leases no key, and a bound holds.
TEST_CASE("sqlite_store_migrates_a_version_6_database_and_bounds_claims_per_client", "[store]") {
  SqliteFileBackend backend;
  {
    SqliteStore store(backend.path);
    create(store, "p");
    REQUIRE(claim_committed(store, "p", "k", 0, 100, "l0"));
  }
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(backend.path.c_str(), &raw) == SQLITE_OK);
  REQUIRE(
      sqlite3_exec(raw,
                   "ALTER TABLE populations DROP COLUMN privacy; "
                   "ALTER TABLE populations DROP COLUMN privacy_secret; "
                   "DROP INDEX leases_by_client; ALTER TABLE leases DROP COLUMN client_key; "
                   "ALTER TABLE populations DROP COLUMN max_tasks_per_client; "
                   "ALTER TABLE populations DROP COLUMN paused; "
                   "ALTER TABLE populations DROP COLUMN finish_reason; "
                   "ALTER TABLE populations DROP COLUMN tokens_epoch; DROP TABLE client_tokens; "
                   "DROP TABLE devices; "
                   "UPDATE schema_version SET version = 6",
                   nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);

  SqliteStore migrated(backend.path);
  CHECK(migrated.find_population("p")->settings.max_tasks_per_client == 0);
  CHECK(migrated.count_client_tasks("p", "k", 100).held == 0);
  REQUIRE(claim_committed(migrated, "p", "k", 1, 100, "l1"));
  CHECK_FALSE(claim_committed(migrated, "p", "k", 1, 100, "l2"));
}

TEST_CASE("postgres_a_version_7_database_is_migrated_and_bounds_claims_per_client",
          "[store][postgres]") {
  PostgresBackend backend;
  {
    const std::unique_ptr<Store> first = backend.open();
    if (!first) return;
    create(*first, "p");
    REQUIRE(claim_committed(*first, "p", "k", 0, 100, "l0"));
  }
  pg_conn* admin = PQconnectdb(backend.url().c_str());
  pg_result* r = PQexec(admin,
                        "DROP INDEX leases_by_client; ALTER TABLE leases DROP COLUMN client_key; "
                        "ALTER TABLE populations DROP COLUMN max_tasks_per_client; "
                        "ALTER TABLE populations DROP COLUMN privacy; "
                        "ALTER TABLE populations DROP COLUMN privacy_secret; DROP TABLE devices; "
                        "UPDATE schema_version SET version = 7");
  REQUIRE(PQresultStatus(r) == PGRES_COMMAND_OK);
  PQclear(r);

  const std::unique_ptr<Store> migrated = backend.open();
  r = PQexec(admin, "SELECT version FROM schema_version");
  CHECK(std::string(PQgetvalue(r, 0, 0)) == std::to_string(PostgresStore::kSchemaVersion));
  PQclear(r);
  r = PQexec(admin,
             "SELECT count(*) FROM pg_indexes WHERE indexname = 'leases_by_client' AND "
             "schemaname = current_schema()");
  CHECK(std::string(PQgetvalue(r, 0, 0)) == "1");
  PQclear(r);
  PQfinish(admin);
  CHECK(migrated->find_population("p")->settings.max_tasks_per_client == 0);
  REQUIRE(claim_committed(*migrated, "p", "k", 1, 100, "l1"));
  CHECK_FALSE(claim_committed(*migrated, "p", "k", 1, 100, "l2"));
}

}  // namespace fedleaf::server
