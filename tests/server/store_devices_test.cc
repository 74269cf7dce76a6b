// The Store suite (store_suite.h), every backend: a private population's devices
// (device_store.h) — enrolled under a client token within its hourly limit (counted in the
// store, on every connection), found by their credential's hash, their participations recorded,
// revoked once, listed a page at a time; databases of the previous schema version are migrated
// (no privacy section, no devices).
#include <libpq-fe.h>
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "server/store/postgres_store.h"
#include "server/store/sqlite_store.h"
#include "server/store/store.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"
#include "tests/server/store_suite.h"

namespace fedleaf::server {
namespace {

using store_suite::create;

DeviceRecord device(const std::string& id, const std::string& token_hash, double at) {
  return {"p", id, "cred-" + id, token_hash, at, 0, 0, -1};
}

EnrollOutcome enroll(Store& store, const DeviceRecord& d, int max_per_hour) {
  StoreTransaction tx(store, Durability::kFull);
  const EnrollOutcome out = store.enroll_device(d, max_per_hour);
  tx.commit();
  return out;
}

void participate(Store& store, const std::string& id, int round) {
  StoreTransaction tx(store, Durability::kNormal);
  store.record_participation("p", id, round);
  tx.commit();
}

bool revoke(Store& store, const std::string& id, double now) {
  StoreTransaction tx(store, Durability::kFull);
  const bool revoked = store.revoke_device("p", id, now);
  tx.commit();
  return revoked;
}

}  // namespace

FEDLEAF_STORE_CASE(store_devices_are_enrolled_found_by_credential_counted_and_revoked_once,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  REQUIRE(enroll(store, device("a1", "tok", 200), 10).enrolled);
  REQUIRE(enroll(store, device("b2", "tok", 201), 10).enrolled);

  std::optional<DeviceRecord> found = store.find_device("p", "cred-a1", false);
  REQUIRE(found);
  CHECK(found->id == "a1");
  CHECK(found->token_hash == "tok");
  CHECK(found->enrolled_at == 200);
  CHECK(found->participations == 0);
  CHECK(found->last_round == -1);
  CHECK_FALSE(store.find_device("p", "cred-zz", false));
  CHECK_FALSE(store.find_device("q", "cred-a1", false));  // another population's namespace

  participate(store, "a1", 0);
  participate(store, "a1", 3);
  found = store.find_device("p", "cred-a1", false);
  CHECK(found->participations == 2);
  CHECK(found->last_round == 3);
  CHECK(store.find_device("p", "cred-b2", false)->participations == 0);

  CHECK(revoke(store, "a1", 300));
  CHECK_FALSE(revoke(store, "a1", 301));  // once
  CHECK(store.find_device("p", "cred-a1", false)->revoked_at == 300);

  const std::vector<DeviceRecord> all = store.list_devices("p", "", 10);
  REQUIRE(all.size() == 2);
  CHECK(all[0].id == "a1");
  CHECK(all[1].id == "b2");
  const std::vector<DeviceRecord> page = store.list_devices("p", "a1", 1);
  REQUIRE(page.size() == 1);
  CHECK(page[0].id == "b2");
  CHECK(store.list_devices("p", "", 1).size() == 1);

  StoreTransaction tx(store, Durability::kFull);
  CHECK_THROWS_AS(store.revoke_device("p", "nope", 302), NotFound);
  CHECK_THROWS_AS(store.revoke_device("nope", "a1", 302), NotFound);
  CHECK_THROWS_AS(store.record_participation("p", "nope", 1), NotFound);
  CHECK_THROWS_AS(store.enroll_device({"nope", "x", "c", "t", 1, 0, 0, -1}, 10), NotFound);
}

FEDLEAF_STORE_CASE(store_a_credential_names_one_device_of_a_population, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  REQUIRE(enroll(store, device("a1", "tok", 200), 10).enrolled);
  DeviceRecord twin = device("c3", "tok", 201);
  twin.credential_hash = "cred-a1";
  StoreTransaction tx(store, Durability::kFull);
  CHECK_THROWS_AS(store.enroll_device(twin, 10), Conflict);
}

FEDLEAF_STORE_CASE(store_enrollments_are_limited_per_client_token_per_hour,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  CHECK(enroll(store, device("a1", "tok", 1000), 2).enrolled);
  CHECK(enroll(store, device("a2", "tok", 1500), 2).enrolled);

  const EnrollOutcome refused = enroll(store, device("a3", "tok", 2000), 2);
  CHECK_FALSE(refused.enrolled);
  REQUIRE(refused.retry_at);
  CHECK(*refused.retry_at == 1000 + 3600);  // the oldest of the hour leaves the window
  CHECK_FALSE(store.find_device("p", "cred-a3", false));  // nothing stored
  CHECK(store.list_devices("p", "", 10).size() == 2);

  CHECK(enroll(store, device("b1", "other", 2000), 2).enrolled);      // another token's own limit
  CHECK_FALSE(enroll(store, device("a3", "tok", 4599), 2).enrolled);  // an hour not yet over
  CHECK(enroll(store, device("a3", "tok", 4600), 2).enrolled);  // at retry_at: a1 left the hour
}

FEDLEAF_STORE_CASE(store_the_enrollment_limit_holds_on_every_connection_to_a_shared_store,
                   FEDLEAF_SHARED_STORE_BACKENDS) {
  create(store, "p");
  auto other = backend.open();
  CHECK(enroll(store, device("a1", "tok", 1000), 2).enrolled);
  CHECK(enroll(*other, device("a2", "tok", 1001), 2).enrolled);
  CHECK_FALSE(enroll(store, device("a3", "tok", 1002), 2).enrolled);
  CHECK_FALSE(enroll(*other, device("a4", "tok", 1003), 2).enrolled);
  // A revocation on one connection is what the other reads.
  CHECK(revoke(*other, "a1", 1100));
  CHECK(store.find_device("p", "cred-a1", true)->revoked_at == 1100);
}

FEDLEAF_STORE_CASE(store_a_population_keeps_its_privacy_section, FEDLEAF_STORE_BACKENDS) {
  PopulationRecord p = store_suite::population("p");
  p.settings.privacy_json = R"({"max_participations":2,"min_separation":1})";
  StoreTransaction tx(store, Durability::kFull);
  store.create_population(p, store_suite::round_record("p", 0), {"p", 0, "etag-0", "model-0"});
  tx.commit();
  CHECK(store.find_population("p")->settings.privacy_json == p.settings.privacy_json);
  CHECK(store.list_populations()[0].settings.privacy_json == p.settings.privacy_json);
}

// A version 8 database (no privacy, no devices): migrated, its populations without privacy, and
// devices enroll.
TEST_CASE("sqlite_store_migrates_a_version_8_database_and_enrolls_devices", "[store]") {
  SqliteFileBackend backend;
  {
    SqliteStore store(backend.path);
    create(store, "p");
  }
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(backend.path.c_str(), &raw) == SQLITE_OK);
  REQUIRE(sqlite3_exec(raw,
                       "ALTER TABLE populations DROP COLUMN privacy; "
                       "ALTER TABLE populations DROP COLUMN privacy_secret; DROP TABLE devices; "
                       "DROP TABLE device_enrollments; UPDATE schema_version SET version = 8",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);

  SqliteStore migrated(backend.path);
  CHECK(migrated.find_population("p")->settings.privacy_json.empty());
  CHECK(enroll(migrated, device("a1", "tok", 200), 10).enrolled);
  CHECK(migrated.find_device("p", "cred-a1", false)->id == "a1");
}

// A version 9 database (devices counted per token by devices_by_token): its enrollments are
// numbered on migration, so the hour's limit still counts the ones enrolled before it.
TEST_CASE("sqlite_store_migrates_a_version_9_database_keeping_its_enrollment_limit", "[store]") {
  SqliteFileBackend backend;
  {
    SqliteStore store(backend.path);
    create(store, "p");
    REQUIRE(enroll(store, device("a2", "tok", 1500), 2).enrolled);
    REQUIRE(enroll(store, device("a1", "tok", 1000), 2).enrolled);
  }
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(backend.path.c_str(), &raw) == SQLITE_OK);
  // Version 9's devices (a2 enrolled first but at the later time: numbered by time on migration).
  REQUIRE(sqlite3_exec(raw,
                       "DROP TABLE device_enrollments; CREATE INDEX devices_by_token ON devices "
                       "(population_id, token_hash, enrolled_at); "
                       "UPDATE schema_version SET version = 9",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);

  SqliteStore migrated(backend.path);
  const EnrollOutcome refused = enroll(migrated, device("a3", "tok", 2000), 2);
  CHECK_FALSE(refused.enrolled);
  CHECK(refused.retry_at == std::optional<double>(1000 + 3600));
  CHECK(enroll(migrated, device("b1", "other", 2000), 2).enrolled);
  CHECK_FALSE(enroll(migrated, device("a3", "tok", 4599), 2).enrolled);
  CHECK(enroll(migrated, device("a3", "tok", 4600), 2).enrolled);        // a1 left the hour
  CHECK_FALSE(enroll(migrated, device("a4", "tok", 5000), 2).enrolled);  // a2 (1500) is in it
  CHECK(enroll(migrated, device("a4", "tok", 5100), 2).enrolled);
  sqlite3* check = nullptr;
  REQUIRE(sqlite3_open(backend.path.c_str(), &check) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(check,
                             "SELECT count(*) FROM sqlite_master WHERE name = 'devices_by_token'",
                             -1, &stmt, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  CHECK(sqlite3_column_int(stmt, 0) == 0);  // the index version 9 counted by is gone
  sqlite3_finalize(stmt);
  sqlite3_close(check);
}

// Many enrollments of one token: the limit reads the one `limit` back, whatever the count.
FEDLEAF_STORE_CASE(store_the_enrollment_limit_holds_after_many_enrollments,
                   FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  for (int i = 0; i < 300; ++i) {
    REQUIRE(enroll(store, device("d" + std::to_string(i), "tok", 10 * i), 100).enrolled == i < 100);
  }
  // 300 tried over 3,000 s at a limit of 100 an hour: the first 100, then none within the hour.
  CHECK(store.list_devices("p", "", 1000).size() == 100);
  CHECK(enroll(store, device("x", "tok", 3600), 100).enrolled);  // d0 (at 0) left the hour
  const EnrollOutcome full = enroll(store, device("y", "tok", 3605), 100);
  CHECK_FALSE(full.enrolled);
  CHECK(full.retry_at == std::optional<double>(10 + 3600));  // when d1 leaves it
  CHECK(enroll(store, device("y", "tok", 3610), 100).enrolled);
}

TEST_CASE("postgres_a_version_9_database_is_migrated_and_enrolls_devices", "[store][postgres]") {
  PostgresBackend backend;
  {
    const std::unique_ptr<Store> first = backend.open();
    if (!first) return;
    create(*first, "p");
  }
  pg_conn* admin = PQconnectdb(backend.url().c_str());
  pg_result* r = PQexec(admin,
                        "ALTER TABLE populations DROP COLUMN privacy; "
                        "ALTER TABLE populations DROP COLUMN privacy_secret; DROP TABLE devices; "
                        "DROP TABLE device_enrollments; UPDATE schema_version SET version = 9");
  REQUIRE(PQresultStatus(r) == PGRES_COMMAND_OK);
  PQclear(r);

  const std::unique_ptr<Store> migrated = backend.open();
  r = PQexec(admin, "SELECT version FROM schema_version");
  CHECK(std::string(PQgetvalue(r, 0, 0)) == std::to_string(PostgresStore::kSchemaVersion));
  PQclear(r);
  PQfinish(admin);
  CHECK(migrated->find_population("p")->settings.privacy_json.empty());
  CHECK(enroll(*migrated, device("a1", "tok", 200), 10).enrolled);
  CHECK(migrated->find_device("p", "cred-a1", false)->id == "a1");
}

TEST_CASE("postgres_a_version_10_database_keeps_its_enrollment_limit", "[store][postgres]") {
  PostgresBackend backend;
  {
    const std::unique_ptr<Store> first = backend.open();
    if (!first) return;
    create(*first, "p");
    REQUIRE(enroll(*first, device("a2", "tok", 1500), 2).enrolled);
    REQUIRE(enroll(*first, device("a1", "tok", 1000), 2).enrolled);
  }
  pg_conn* admin = PQconnectdb(backend.url().c_str());
  pg_result* r = PQexec(admin,
                        "DROP TABLE device_enrollments; CREATE INDEX devices_by_token ON devices "
                        "(population_id, token_hash, enrolled_at); "
                        "UPDATE schema_version SET version = 10");
  REQUIRE(PQresultStatus(r) == PGRES_COMMAND_OK);
  PQclear(r);
  const std::unique_ptr<Store> migrated = backend.open();
  r = PQexec(admin, "SELECT count(*) FROM pg_indexes WHERE indexname = 'devices_by_token'");
  CHECK(std::string(PQgetvalue(r, 0, 0)) == "0");
  PQclear(r);
  PQfinish(admin);
  const EnrollOutcome refused = enroll(*migrated, device("a3", "tok", 2000), 2);
  CHECK_FALSE(refused.enrolled);
  CHECK(refused.retry_at == std::optional<double>(1000 + 3600));
  CHECK(enroll(*migrated, device("a3", "tok", 4600), 2).enrolled);
  CHECK_FALSE(enroll(*migrated, device("a4", "tok", 5000), 2).enrolled);
}

}  // namespace fedleaf::server
