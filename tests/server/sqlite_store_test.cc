// SqliteStore-only cases: reopening a file, schema versions and migrations. The operations are
// the shared suite's (store_*_test.cc, store_suite.h).
#include "server/store/sqlite_store.h"

#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

// Population `id` with its round 0 and model 0 (bytes "model"), in the caller's transaction.
void create_population(Store& store, const std::string& id) {
  RoundRecord round0;
  round0.population_id = id;
  store.create_population(test::test_population_record(id), round0, {id, 0, "etag", "model"});
}

void seed(Store& store) {
  StoreTransaction tx(store, Durability::kFull);
  create_population(store, "p");
  tx.commit();
}

// A seeded file store, then `sql` run on its database past the store (what an older server
// wrote).
void seed_then_rewrite(const std::string& path, const char* sql) {
  {
    SqliteStore store(path);
    seed(store);
  }
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
  REQUIRE(sqlite3_exec(raw, sql, nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);
}

// Closes round 0 of "p" publishing `model` (in a transaction committed only when `commit`).
void close_round0(Store& store, const std::string& etag, const std::string& model, bool commit) {
  StoreTransaction tx(store, Durability::kFull);
  RoundCloseWrite close;
  close.closed = *store.lock_open_round("p", 0);
  close.closed.status = RoundStatus::kClosed;
  close.population = *store.find_population("p");
  close.population.current_round = 1;
  close.opened = close.closed;
  close.opened->number = 1;
  close.opened->status = RoundStatus::kOpen;
  close.model = ModelRecord{"p", 1, etag, model};
  store.close_round(close);
  if (commit) tx.commit();
}

// The value of one column of the first row `sql` returns, read past the store.
std::string raw_text(const std::string& path, const char* sql) {
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &raw) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(raw, sql, -1, &stmt, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  std::string out = text ? text : "";
  sqlite3_finalize(stmt);
  sqlite3_close(raw);
  return out;
}

}  // namespace

// Dropping a round's results frees their overflow pages without writing them again (secure_delete
// FAST): the WAL grows by the b-tree pages the delete changes, not by the results' size.
TEST_CASE("sqlite_drop_results_does_not_rewrite_the_freed_pages_of_the_results", "[store]") {
  SqliteFileBackend backend;
  auto store = backend.open();
  const std::string bytes(400000, 'R');  // ~98 overflow pages of 4 KiB
  {
    StoreTransaction tx(*store, Durability::kFull);
    create_population(*store, "p");
    tx.commit();
  }
  {
    StoreTransaction tx(*store, Durability::kNormal);
    const std::optional<ClaimedTask> task =
        store->claim_task({"p", 0, TaskKind::kTrain, 5, 10, 15, "h"});
    REQUIRE(task);
    AcceptRequest r;
    r.task_id = task->task_id;
    r.lease_id = task->lease_id;
    r.result_sha256 = "sha";
    r.now = 11;
    r.train_bytes = bytes;
    r.delta.examples = 10;
    r.receipt_body = [](int) { return std::string("{}"); };
    REQUIRE(store->accept_result(r).status == AcceptStatus::kAccepted);
    tx.commit();
  }
  REQUIRE(store->list_results("p", 0, 0).size() == 1);
  // Empty the WAL into the database, so that its size counts the drop's frames alone.
  raw_text(backend.path, "PRAGMA wal_checkpoint(TRUNCATE)");
  REQUIRE(std::filesystem::file_size(backend.path + "-wal") == 0);
  {
    StoreTransaction tx(*store, Durability::kFull);
    store->drop_results("p", 0);
    tx.commit();
  }
  CHECK(store->list_results("p", 0, 0).empty());
  const auto wal = std::filesystem::file_size(backend.path + "-wal");
  CHECK(wal > 0);
  CHECK(wal < bytes.size() / 4);  // secure_delete ON writes each freed page: > bytes.size()
}

TEST_CASE("sqlite_file_store_keeps_models_in_files_named_by_etag_readable_after_reopen",
          "[store]") {
  SqliteFileBackend backend;
  const std::string model1(3 << 20, 'm');  // large enough to span many pages
  {
    auto store = backend.open();
    seed(*store);
    close_round0(*store, "etag1", model1, true);
  }

  auto reopened = backend.open();

  CHECK(reopened->find_model("p", 0)->bytes == "model");
  CHECK(reopened->find_model("p", 1)->bytes == model1);
  CHECK(std::filesystem::file_size(backend.path + "-models/etag1.safetensors") == model1.size());
  CHECK(raw_text(backend.path,
                 "SELECT storage || ':' || length(bytes) FROM models WHERE round = 1") == "file:0");
}

// A close that wrote its model file (persist_model, then close_round) and crashed before its
// commit: the database holds the open round and no model row, and the file, named by no row, is
// moved to lost+found/ when the store opens again (and reported); a temporary file is deleted.
TEST_CASE("sqlite_file_store_sets_aside_the_model_file_of_a_close_that_never_committed",
          "[store]") {
  SqliteFileBackend backend;
  {
    auto store = backend.open();
    seed(*store);
    store->persist_model({"p", 1, "etag1", "model 1"});
    close_round0(*store, "etag1", "model 1", false);
    CHECK(std::filesystem::exists(backend.path + "-models/etag1.safetensors"));
  }
  { std::ofstream(backend.path + "-models/etag2.safetensors.123.0.tmp") << "half written"; }

  SqliteStore reopened(backend.path);

  CHECK(reopened.model_files_at_open().set_aside == std::vector<std::string>{"etag1.safetensors"});
  CHECK(reopened.model_files_at_open().named == 1);
  CHECK(reopened.find_round("p", 0)->status == RoundStatus::kOpen);
  CHECK_FALSE(reopened.find_model("p", 1));
  CHECK(reopened.find_model("p", 0)->bytes == "model");
  CHECK_FALSE(std::filesystem::exists(backend.path + "-models/etag1.safetensors"));
  CHECK(std::filesystem::exists(backend.path + "-models/lost+found/etag1.safetensors"));
  CHECK_FALSE(std::filesystem::exists(backend.path + "-models/etag2.safetensors.123.0.tmp"));
  close_round0(reopened, "etag1", "model 1", true);
  CHECK(reopened.find_model("p", 1)->bytes == "model 1");
}

// Regression: --db naming a new (or emptied) database beside an existing model directory
// deleted every model file, and logged nothing.
TEST_CASE("sqlite_file_store_opened_new_beside_model_files_keeps_them_in_lost_and_found",
          "[store]") {
  SqliteFileBackend backend;
  {
    auto store = backend.open();
    seed(*store);
  }
  std::filesystem::remove(backend.path);
  std::filesystem::remove(backend.path + "-wal");
  std::filesystem::remove(backend.path + "-shm");

  SqliteStore fresh(backend.path);

  CHECK(fresh.model_files_at_open().named == 0);
  CHECK(fresh.model_files_at_open().set_aside == std::vector<std::string>{"etag.safetensors"});
  std::ifstream kept(backend.path + "-models/lost+found/etag.safetensors");
  CHECK(std::string(std::istreambuf_iterator<char>(kept), {}) == "model");
}

// Regression: a damaged page of a table was found by the first write that touched it; then every
// commit failed with 503, and a restart did the same.
TEST_CASE("sqlite_store_refuses_to_open_a_damaged_database_naming_it", "[store]") {
  SqliteFileBackend backend;
  {
    auto store = backend.open();
    seed(*store);
  }
  const std::string root_page = raw_text(backend.path,
                                         "SELECT rootpage FROM sqlite_master "
                                         "WHERE name = 'tasks'");
  const std::string page_size = raw_text(backend.path, "PRAGMA page_size");
  {
    std::fstream file(backend.path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp((std::stoll(root_page) - 1) * std::stoll(page_size));
    file.put('\x01');  // no b-tree page type
  }

  CHECK_THROWS_WITH(SqliteStore(backend.path), Catch::StartsWith("sqlite store '" + backend.path +
                                                                 "': the database is damaged "
                                                                 "(PRAGMA quick_check: ") &&
                                                   Catch::Contains("restore it from a backup"));
}

TEST_CASE("sqlite_file_store_find_model_of_a_missing_model_file_throws_naming_the_file",
          "[store]") {
  SqliteFileBackend backend;
  auto store = backend.open();
  seed(*store);
  std::filesystem::remove(backend.path + "-models/etag.safetensors");

  CHECK_THROWS_WITH(store->find_model("p", 0), Catch::Contains("etag.safetensors"));
}

// A version 2 database keeps its models as blobs: after the migration they read as before.
TEST_CASE("sqlite_store_migrates_a_version_2_database_and_reads_its_model_blobs", "[store]") {
  SqliteFileBackend backend;
  seed_then_rewrite(backend.path,
                    "ALTER TABLE populations DROP COLUMN privacy; "
                    "ALTER TABLE populations DROP COLUMN privacy_secret; "
                    "DROP INDEX leases_by_client; ALTER TABLE leases DROP COLUMN client_key; "
                    "ALTER TABLE populations DROP COLUMN max_tasks_per_client; "
                    "ALTER TABLE populations DROP COLUMN paused; "
                    "ALTER TABLE populations DROP COLUMN finish_reason; "
                    "ALTER TABLE populations DROP COLUMN tokens_epoch; DROP TABLE client_tokens; "
                    "UPDATE models SET bytes = CAST('blob model' AS BLOB); "
                    "ALTER TABLE models DROP COLUMN storage; "
                    "ALTER TABLE leases DROP COLUMN refused_sha256; "
                    "ALTER TABLE populations DROP COLUMN server_optimizer; "
                    "ALTER TABLE populations DROP COLUMN buffered; "
                    "DROP TABLE optimizer_states; "
                    "DROP TABLE devices; "
                    "UPDATE schema_version SET version = 2");

  SqliteStore migrated(backend.path);

  CHECK(migrated.find_model("p", 0)->bytes == "blob model");
  CHECK_FALSE(std::filesystem::exists(backend.path + "-models/etag.safetensors"));
  CHECK(raw_text(backend.path, "SELECT version FROM schema_version") ==
        std::to_string(SqliteStore::kSchemaVersion));
}

// A version 3 database's leases have no refused_sha256: migrated, its refusals are counted once.
TEST_CASE("sqlite_store_migrates_a_version_3_database_and_counts_its_refusals_once", "[store]") {
  SqliteFileBackend backend;
  seed_then_rewrite(backend.path,
                    "ALTER TABLE populations DROP COLUMN privacy; "
                    "ALTER TABLE populations DROP COLUMN privacy_secret; "
                    "DROP INDEX leases_by_client; ALTER TABLE leases DROP COLUMN client_key; "
                    "ALTER TABLE populations DROP COLUMN max_tasks_per_client; "
                    "ALTER TABLE populations DROP COLUMN paused; "
                    "ALTER TABLE populations DROP COLUMN finish_reason; "
                    "ALTER TABLE populations DROP COLUMN tokens_epoch; DROP TABLE client_tokens; "
                    "ALTER TABLE leases DROP COLUMN refused_sha256; "
                    "ALTER TABLE populations DROP COLUMN server_optimizer; "
                    "ALTER TABLE populations DROP COLUMN buffered; "
                    "DROP TABLE optimizer_states; "
                    "DROP TABLE devices; "
                    "UPDATE schema_version SET version = 3");

  SqliteStore migrated(backend.path);
  std::optional<ClaimedTask> task;
  {
    StoreTransaction tx(migrated, Durability::kFull);
    task = migrated.claim_task({"p", 0, TaskKind::kTrain, 1, 0, 10, "lease-hash"});
    tx.commit();
  }
  REQUIRE(task);
  StoreTransaction tx(migrated, Durability::kFull);
  const bool counted = migrated.add_rejection({"p", "lease_expired", task->lease_id, "sha"});
  const bool counted_again = migrated.add_rejection({"p", "lease_expired", task->lease_id, "sha"});
  tx.commit();

  CHECK(counted);
  CHECK_FALSE(counted_again);
  CHECK(raw_text(backend.path, "SELECT version FROM schema_version") ==
        std::to_string(SqliteStore::kSchemaVersion));
}

// A version 4 database has no server optimizers: migrated, its populations run FedAvg ("") and
// its closes may store an optimizer's state.
TEST_CASE("sqlite_store_migrates_a_version_4_database_and_its_populations_run_fedavg", "[store]") {
  SqliteFileBackend backend;
  seed_then_rewrite(backend.path,
                    "ALTER TABLE populations DROP COLUMN privacy; "
                    "ALTER TABLE populations DROP COLUMN privacy_secret; "
                    "DROP INDEX leases_by_client; ALTER TABLE leases DROP COLUMN client_key; "
                    "ALTER TABLE populations DROP COLUMN max_tasks_per_client; "
                    "ALTER TABLE populations DROP COLUMN paused; "
                    "ALTER TABLE populations DROP COLUMN finish_reason; "
                    "ALTER TABLE populations DROP COLUMN tokens_epoch; DROP TABLE client_tokens; "
                    "ALTER TABLE populations DROP COLUMN server_optimizer; "
                    "ALTER TABLE populations DROP COLUMN buffered; "
                    "DROP TABLE optimizer_states; "
                    "DROP TABLE devices; "
                    "UPDATE schema_version SET version = 4");

  SqliteStore migrated(backend.path);

  CHECK(migrated.find_population("p")->settings.server_optimizer_json.empty());
  StoreTransaction tx(migrated, Durability::kFull);
  REQUIRE(migrated.lock_open_round("p", 0));
  RoundCloseWrite close;
  close.closed = *migrated.find_round("p", 0);
  close.population = *migrated.find_population("p");
  close.population.current_round = 1;
  close.opened = RoundRecord{};
  close.opened->population_id = "p";
  close.opened->number = 1;
  close.optimizer_state = OptimizerStateRecord{"p", 1, "etag-state-1", "state-1"};
  migrated.close_round(close);
  tx.commit();
  CHECK(migrated.find_optimizer_state("p", 1)->bytes == "state-1");
  CHECK(raw_text(backend.path, "SELECT version FROM schema_version") ==
        std::to_string(SqliteStore::kSchemaVersion));
}

// A version 5 database has no buffered populations: migrated, its populations run synchronous
// rounds (""), and a buffered population's spec is stored and read back.
TEST_CASE("sqlite_store_migrates_a_version_5_database_and_its_populations_run_synchronous_rounds",
          "[store]") {
  SqliteFileBackend backend;
  seed_then_rewrite(backend.path,
                    "ALTER TABLE populations DROP COLUMN privacy; "
                    "ALTER TABLE populations DROP COLUMN privacy_secret; "
                    "DROP INDEX leases_by_client; ALTER TABLE leases DROP COLUMN client_key; "
                    "ALTER TABLE populations DROP COLUMN max_tasks_per_client; "
                    "ALTER TABLE populations DROP COLUMN paused; "
                    "ALTER TABLE populations DROP COLUMN finish_reason; "
                    "ALTER TABLE populations DROP COLUMN tokens_epoch; DROP TABLE client_tokens; "
                    "ALTER TABLE populations DROP COLUMN buffered; "
                    "DROP TABLE devices; "
                    "UPDATE schema_version SET version = 5");

  SqliteStore migrated(backend.path);

  PopulationRecord p = *migrated.find_population("p");
  CHECK(p.settings.buffered_json.empty());
  p.id = "q";
  p.settings.buffered_json = R"({"buffer_size":2})";
  RoundRecord round0 = *migrated.find_round("p", 0);
  round0.population_id = "q";
  {
    StoreTransaction tx(migrated, Durability::kFull);
    migrated.create_population(p, round0, ModelRecord{"q", 0, "etag-q", "model q"});
    tx.commit();
  }
  CHECK(migrated.find_population("q")->settings.buffered_json == R"({"buffer_size":2})");
  CHECK(raw_text(backend.path, "SELECT version FROM schema_version") ==
        std::to_string(SqliteStore::kSchemaVersion));
}

// A file database keeps an optimizer state as it keeps a model: a file in `<db>-models/`, written
// before the commit naming it, deleted once a later close's drop of its row is durable, and named
// (not set aside) when the store opens again.
TEST_CASE("sqlite_file_store_keeps_optimizer_states_in_model_files", "[store]") {
  SqliteFileBackend backend;
  const auto close_with_state = [&](Store& store, int number, const std::string& etag) {
    StoreTransaction tx(store, Durability::kFull);
    REQUIRE(store.lock_open_round("p", number));
    RoundCloseWrite close;
    close.closed = *store.find_round("p", number);
    close.population = *store.find_population("p");
    close.population.current_round = number + 1;
    close.opened = RoundRecord{};
    close.opened->population_id = "p";
    close.opened->number = number + 1;
    close.optimizer_state = OptimizerStateRecord{"p", number + 1, etag, "bytes of " + etag};
    store.close_round(close);
    tx.commit();
  };
  const std::string dir = backend.path + "-models/";
  {
    SqliteStore store(backend.path);
    seed(store);
    close_with_state(store, 0, "state-1");
    CHECK(std::filesystem::exists(dir + "state-1.safetensors"));
    CHECK(store.find_optimizer_state("p", 1)->bytes == "bytes of state-1");
    CHECK(raw_text(backend.path, "SELECT storage FROM optimizer_states") == "file");
  }
  SqliteStore reopened(backend.path);
  CHECK(reopened.model_files_at_open().set_aside.empty());
  CHECK(reopened.find_optimizer_state("p", 1)->bytes == "bytes of state-1");
  close_with_state(reopened, 1, "state-2");

  CHECK_FALSE(std::filesystem::exists(dir + "state-1.safetensors"));
  CHECK(reopened.find_optimizer_state("p", 2)->bytes == "bytes of state-2");
  CHECK_FALSE(reopened.find_optimizer_state("p", 1));
}

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
  seed_then_rewrite(backend.path, "UPDATE schema_version SET version = 99");

  CHECK_THROWS_WITH(SqliteStore(backend.path), Catch::Contains("schema version 99"));
}

// A database written by a version 1 server (no robust_json column) opens: migrated to version
// 2 in one transaction, its rounds read with "{}" for the new field, and stays writable.
TEST_CASE("sqlite_store_migrates_a_version_1_database_and_keeps_its_rounds", "[store]") {
  SqliteFileBackend backend;
  seed_then_rewrite(backend.path,
                    "ALTER TABLE populations DROP COLUMN privacy; "
                    "ALTER TABLE populations DROP COLUMN privacy_secret; "
                    "DROP INDEX leases_by_client; ALTER TABLE leases DROP COLUMN client_key; "
                    "ALTER TABLE populations DROP COLUMN max_tasks_per_client; "
                    "ALTER TABLE populations DROP COLUMN paused; "
                    "ALTER TABLE populations DROP COLUMN finish_reason; "
                    "ALTER TABLE populations DROP COLUMN tokens_epoch; DROP TABLE client_tokens; "
                    "ALTER TABLE rounds DROP COLUMN robust_json; "
                    "UPDATE models SET bytes = CAST('model' AS BLOB); "
                    "ALTER TABLE models DROP COLUMN storage; "
                    "ALTER TABLE leases DROP COLUMN refused_sha256; "
                    "ALTER TABLE populations DROP COLUMN server_optimizer; "
                    "ALTER TABLE populations DROP COLUMN buffered; "
                    "DROP TABLE optimizer_states; "
                    "DROP TABLE devices; "
                    "UPDATE schema_version SET version = 1");

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
  CHECK(raw_text(backend.path, "SELECT version FROM schema_version") ==
        std::to_string(SqliteStore::kSchemaVersion));
}

// A file-backed store whose round 0 is closed with its model in models/etag.safetensors.
struct StoreWithModelFile {
  SqliteFileBackend backend;
  SqliteStore store{backend.path};
  std::string file0 = backend.path + "-models/etag.safetensors";
  StoreWithModelFile() {
    seed(store);
    close_round0(store, "etag-1", "model-1", true);
  }
};

TEST_CASE_METHOD(StoreWithModelFile,
                 "sqlite_file_store_deletes_a_dropped_models_file_once_the_drop_is_durable",
                 "[store]") {
  {
    StoreTransaction tx(store, Durability::kNormal);
    CHECK(store.drop_models("p", 1, 0) == std::vector<int>{0});
    tx.commit();
  }
  CHECK(std::filesystem::exists(file0));  // committed, not yet durable: the row may come back
  store.sync();
  CHECK_FALSE(std::filesystem::exists(file0));
  CHECK(store.find_model("p", 1)->bytes == "model-1");
}

TEST_CASE_METHOD(StoreWithModelFile,
                 "sqlite_file_store_keeps_a_dropped_models_file_a_row_still_or_again_names",
                 "[store]") {
  SECTION("the step that dropped it rolled back") {
    StoreTransaction tx(store, Durability::kNormal);
    store.begin_nested();
    CHECK(store.drop_models("p", 1, 0) == std::vector<int>{0});
    store.rollback_nested();
    tx.commit();
  }
  SECTION("the transaction that dropped it rolled back") {
    StoreTransaction tx(store, Durability::kNormal);
    CHECK(store.drop_models("p", 1, 0) == std::vector<int>{0});
  }
  SECTION("another population's model is the same file") {
    StoreTransaction tx(store, Durability::kFull);
    create_population(store, "q");
    CHECK(store.drop_models("p", 1, 0) == std::vector<int>{0});
    tx.commit();
  }
  SECTION("a new model of the same bytes is persisted before the drop is durable") {
    StoreTransaction tx(store, Durability::kNormal);
    CHECK(store.drop_models("p", 1, 0) == std::vector<int>{0});
    tx.commit();
    store.persist_model({"p", 2, "etag", "model"});
  }
  store.sync();
  CHECK(std::filesystem::exists(file0));
}

// A version 8 database has no privacy columns: migrated, its populations are not private, and a
// private one keeps its section and secret across a reopen.
TEST_CASE("sqlite_store_migrates_a_version_8_database_and_keeps_a_private_populations_secret",
          "[store]") {
  SqliteFileBackend backend;
  seed_then_rewrite(backend.path,
                    "ALTER TABLE populations DROP COLUMN privacy; "
                    "ALTER TABLE populations DROP COLUMN privacy_secret; "
                    "UPDATE schema_version SET version = 8");
  const std::string secret(64, 'a');
  {
    SqliteStore migrated(backend.path);
    PopulationRecord p = *migrated.find_population("p");
    CHECK(p.settings.privacy_json.empty());
    CHECK(p.privacy_secret.empty());
    p.id = "q";
    p.settings.privacy_json = R"({"mechanism":"dp_ftrl_tree"})";
    p.privacy_secret = secret;
    RoundRecord round0 = *migrated.find_round("p", 0);
    round0.population_id = "q";
    StoreTransaction tx(migrated, Durability::kFull);
    migrated.create_population(p, round0, ModelRecord{"q", 0, "etag-q", "model q"});
    tx.commit();
  }
  SqliteStore reopened(backend.path);
  CHECK(reopened.find_population("q")->settings.privacy_json == R"({"mechanism":"dp_ftrl_tree"})");
  CHECK(reopened.find_population("q")->privacy_secret == secret);
  CHECK(raw_text(backend.path, "SELECT version FROM schema_version") ==
        std::to_string(SqliteStore::kSchemaVersion));
}

}  // namespace fedleaf::server
