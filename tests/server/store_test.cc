// The one Store suite, run on every backend (SQLite in memory and in a file).
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "core/error.h"
#include "server/store/sqlite_store.h"

namespace fedleaf::server {
namespace {

struct SqliteMemoryBackend {
  std::unique_ptr<Store> open() { return std::make_unique<SqliteStore>(":memory:"); }
};

struct SqliteFileBackend {
  std::string path;
  SqliteFileBackend() {
    path = (std::filesystem::temp_directory_path() /
            ("fedleaf_store_test_" + std::to_string(::getpid()) + "_" +
             std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".db"))
               .string();
    remove_files();
  }
  ~SqliteFileBackend() { remove_files(); }
  void remove_files() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  }
  std::unique_ptr<Store> open() { return std::make_unique<SqliteStore>(path); }
};

PopulationRecord population(const std::string& id) {
  PopulationRecord p;
  p.id = id;
  p.plan_json = "{\"updates\": {}}";
  p.client_token_hash = "hash-" + id;
  p.rounds = 3;
  p.clients_per_round = 4;
  p.min_reports = 2;
  p.round_deadline_s = 60;
  p.lease_s = 5;
  p.train_tasks_per_round = 5;
  p.eval_tasks_per_round = 1;
  p.created_at = 100;
  return p;
}

RoundRecord round_record(const std::string& id, int number) {
  RoundRecord r;
  r.population_id = id;
  r.number = number;
  r.started_at = 100 + number;
  r.deadline = 160 + number;
  return r;
}

// A population "p" with round 0 (committed), the starting point of most cases.
void seed(Store& store) {
  StoreTransaction tx(store, Durability::kFull);
  store.insert_population(population("p"));
  store.insert_round(round_record("p", 0));
  tx.commit();
}

TaskRecord leased_task(int round, const std::string& kind, double expires) {
  TaskRecord t;
  t.population_id = "p";
  t.round = round;
  t.kind = kind;
  t.lease_expires_at = expires;
  return t;
}

}  // namespace

TEMPLATE_TEST_CASE("store_insert_population_then_find_returns_every_field", "[store]",
                   SqliteMemoryBackend, SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);

  auto found = store->find_population("p");

  REQUIRE(found);
  const PopulationRecord expected = population("p");
  CHECK(found->plan_json == expected.plan_json);
  CHECK(found->client_token_hash == expected.client_token_hash);
  CHECK(found->rounds == 3);
  CHECK(found->clients_per_round == 4);
  CHECK(found->min_reports == 2);
  CHECK(found->round_deadline_s == 60);
  CHECK(found->lease_s == 5);
  CHECK(found->train_tasks_per_round == 5);
  CHECK(found->eval_tasks_per_round == 1);
  CHECK(found->state == "running");
  CHECK(found->current_round == 0);
  CHECK(found->created_at == 100);
  CHECK_FALSE(store->find_population("q"));
}

TEMPLATE_TEST_CASE("store_insert_population_twice_is_conflict", "[store]", SqliteMemoryBackend,
                   SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);

  StoreTransaction tx(*store, Durability::kNormal);
  CHECK_THROWS_AS(store->insert_population(population("p")), Conflict);
}

TEMPLATE_TEST_CASE("store_update_population_writes_state_and_round", "[store]", SqliteMemoryBackend,
                   SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);
  PopulationRecord p = population("p");
  p.state = "finished";
  p.current_round = 2;

  {
    StoreTransaction tx(*store, Durability::kNormal);
    store->update_population(p);
    tx.commit();
  }

  CHECK(store->find_population("p")->state == "finished");
  CHECK(store->find_population("p")->current_round == 2);
  StoreTransaction tx(*store, Durability::kNormal);
  CHECK_THROWS_AS(store->update_population(population("nobody")), NotFound);
}

TEMPLATE_TEST_CASE("store_list_populations_is_ordered_by_id", "[store]", SqliteMemoryBackend,
                   SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  StoreTransaction tx(*store, Durability::kNormal);
  store->insert_population(population("b"));
  store->insert_population(population("a"));
  tx.commit();

  auto all = store->list_populations();

  REQUIRE(all.size() == 2);
  CHECK(all[0].id == "a");
  CHECK(all[1].id == "b");
}

TEMPLATE_TEST_CASE("store_rounds_round_trip_and_list_in_order", "[store]", SqliteMemoryBackend,
                   SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);
  RoundRecord r1 = round_record("p", 1);
  r1.status = "closed";
  r1.closed_at = 150;
  r1.train_tasks = 5;
  r1.eval_tasks = 1;
  r1.reports = 4;
  r1.examples = 40;
  r1.loss_sum = 12.5;
  r1.accuracy_sum = 30;
  r1.accuracy_examples = 40;
  r1.upload_bytes = 1234;
  r1.eval_reports = 1;
  r1.eval_examples = 7;
  r1.eval_sums_json = R"({"loss":3.5})";
  r1.robust_json = R"({"capped":1})";

  StoreTransaction tx(*store, Durability::kFull);
  store->insert_round(r1);
  tx.commit();
  auto found = store->find_round("p", 1);
  auto all = store->list_rounds("p");

  REQUIRE(found);
  CHECK(found->status == "closed");
  CHECK(found->started_at == 101);
  CHECK(found->deadline == 161);
  CHECK(found->closed_at == 150);
  CHECK(found->train_tasks == 5);
  CHECK(found->eval_tasks == 1);
  CHECK(found->reports == 4);
  CHECK(found->examples == 40);
  CHECK(found->loss_sum == 12.5);
  CHECK(found->accuracy_sum == 30);
  CHECK(found->accuracy_examples == 40);
  CHECK(found->upload_bytes == 1234);
  CHECK(found->eval_reports == 1);
  CHECK(found->eval_examples == 7);
  CHECK(found->eval_sums_json == R"({"loss":3.5})");
  CHECK(found->robust_json == R"({"capped":1})");
  CHECK(all[0].robust_json == "{}");
  REQUIRE(all.size() == 2);
  CHECK(all[0].number == 0);
  CHECK(all[1].number == 1);
}

TEMPLATE_TEST_CASE("store_update_round_writes_fields_and_rejects_unknown_round", "[store]",
                   SqliteMemoryBackend, SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);
  RoundRecord r = round_record("p", 0);
  r.reports = 3;
  r.status = "closed";

  StoreTransaction tx(*store, Durability::kNormal);
  store->update_round(r);

  CHECK(store->find_round("p", 0)->reports == 3);
  CHECK(store->find_round("p", 0)->status == "closed");
  CHECK_THROWS_AS(store->update_round(round_record("p", 9)), NotFound);
}

TEMPLATE_TEST_CASE("store_round_of_unknown_population_violates_foreign_key", "[store]",
                   SqliteMemoryBackend, SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();

  StoreTransaction tx(*store, Durability::kNormal);
  CHECK_THROWS_AS(store->insert_round(round_record("ghost", 0)), Error);
}

TEMPLATE_TEST_CASE("store_models_are_immutable", "[store]", SqliteMemoryBackend,
                   SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);
  const std::string bytes("\x01\x00\x02", 3);

  StoreTransaction tx(*store, Durability::kFull);
  store->insert_model({"p", 0, "etag0", bytes});

  auto found = store->find_model("p", 0);
  REQUIRE(found);
  CHECK(found->etag == "etag0");
  CHECK(found->bytes == bytes);
  CHECK_FALSE(store->find_model("p", 1));
  CHECK_THROWS_AS(store->insert_model({"p", 0, "other", "x"}), Conflict);
}

TEMPLATE_TEST_CASE("store_tasks_round_trip_with_ids_in_insertion_order", "[store]",
                   SqliteMemoryBackend, SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);
  StoreTransaction tx(*store, Durability::kNormal);
  const std::int64_t a = store->insert_task(leased_task(0, "train", 10));
  const std::int64_t b = store->insert_task(leased_task(0, "evaluate", 20));
  TaskRecord done = *store->find_task(a);
  done.state = "done";
  done.lease_id = 4;
  done.completed_lease_id = 4;
  done.result_sha256 = "abc";
  done.result_status = 201;
  done.result_body = "{\"ok\":1}";

  store->update_task(done);
  auto found = store->find_task(a);

  CHECK(b > a);
  REQUIRE(found);
  CHECK(found->population_id == "p");
  CHECK(found->kind == "train");
  CHECK(found->state == "done");
  CHECK(found->lease_id == 4);
  CHECK(found->lease_expires_at == 10);
  CHECK(found->completed_lease_id == 4);
  CHECK(found->result_sha256 == "abc");
  CHECK(found->result_status == 201);
  CHECK(found->result_body == "{\"ok\":1}");
  CHECK(store->find_task(b)->kind == "evaluate");
  CHECK_FALSE(store->find_task(b + 100));
  done.id = b + 100;
  CHECK_THROWS_AS(store->update_task(done), NotFound);
}

TEMPLATE_TEST_CASE("store_find_expired_task_returns_earliest_expired_of_kind", "[store]",
                   SqliteMemoryBackend, SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);
  StoreTransaction tx(*store, Durability::kNormal);
  store->insert_task(leased_task(0, "train", 30));
  const std::int64_t early = store->insert_task(leased_task(0, "train", 20));
  store->insert_task(leased_task(0, "evaluate", 5));
  TaskRecord done = leased_task(0, "train", 1);
  done.state = "done";
  store->insert_task(done);

  CHECK_FALSE(store->find_expired_task("p", 0, "train", 19.9));
  CHECK(store->find_expired_task("p", 0, "train", 20)->id == early);
  CHECK(store->find_expired_task("p", 0, "train", 100)->id == early);
  CHECK(store->find_expired_task("p", 0, "evaluate", 100)->kind == "evaluate");
  CHECK_FALSE(store->find_expired_task("p", 1, "train", 100));
}

TEMPLATE_TEST_CASE("store_next_lease_expiry_and_active_leases_ignore_expired_and_done", "[store]",
                   SqliteMemoryBackend, SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);
  StoreTransaction tx(*store, Durability::kNormal);
  store->insert_task(leased_task(0, "train", 10));
  store->insert_task(leased_task(0, "train", 30));
  store->insert_task(leased_task(0, "evaluate", 20));
  TaskRecord done = leased_task(0, "train", 15);
  done.state = "done";
  store->insert_task(done);

  CHECK(store->next_lease_expiry("p", 0, 0) == 10.0);
  CHECK(store->next_lease_expiry("p", 0, 10) == 20.0);
  CHECK_FALSE(store->next_lease_expiry("p", 0, 30));
  CHECK(store->count_active_leases(0) == 3);
  CHECK(store->count_active_leases(12) == 2);
  CHECK(store->count_active_leases(30) == 0);
}

TEMPLATE_TEST_CASE("store_leases_are_listed_per_task_in_order", "[store]", SqliteMemoryBackend,
                   SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);
  StoreTransaction tx(*store, Durability::kNormal);
  const std::int64_t task = store->insert_task(leased_task(0, "train", 10));
  const std::int64_t other = store->insert_task(leased_task(0, "train", 10));
  const std::int64_t first = store->insert_lease({0, task, "h1", 10});
  store->insert_lease({0, other, "hx", 10});
  const std::int64_t second = store->insert_lease({0, task, "h2", 20});

  auto leases = store->list_leases(task);

  REQUIRE(leases.size() == 2);
  CHECK(leases[0].id == first);
  CHECK(leases[0].token_hash == "h1");
  CHECK(leases[1].id == second);
  CHECK(leases[1].expires_at == 20);
}

TEMPLATE_TEST_CASE("store_results_are_listed_after_seq_and_deleted_per_round", "[store]",
                   SqliteMemoryBackend, SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);
  StoreTransaction tx(*store, Durability::kFull);
  const std::int64_t task = store->insert_task(leased_task(0, "train", 10));
  for (int seq = 1; seq <= 3; ++seq) {
    store->insert_result({"p", 0, seq, task, std::string("r") + std::to_string(seq)});
  }

  auto after_one = store->list_results("p", 0, 1);
  REQUIRE(after_one.size() == 2);
  CHECK(after_one[0].seq == 2);
  CHECK(after_one[0].bytes == "r2");
  CHECK(after_one[1].seq == 3);
  CHECK_THROWS_AS(store->insert_result({"p", 0, 2, task, "dup"}), Conflict);

  store->delete_results("p", 0);
  CHECK(store->list_results("p", 0, 0).empty());
}

TEMPLATE_TEST_CASE("store_checkpoint_is_replaced_found_and_deleted", "[store]", SqliteMemoryBackend,
                   SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);
  StoreTransaction tx(*store, Durability::kFull);

  store->put_checkpoint({"p", 0, 4, "four"});
  store->put_checkpoint({"p", 0, 9, "nine"});
  auto found = store->find_checkpoint("p", 0);

  REQUIRE(found);
  CHECK(found->seq == 9);
  CHECK(found->bytes == "nine");
  store->delete_checkpoint("p", 0);
  CHECK_FALSE(store->find_checkpoint("p", 0));
}

TEMPLATE_TEST_CASE("store_rejections_are_counted_per_reason", "[store]", SqliteMemoryBackend,
                   SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);
  StoreTransaction tx(*store, Durability::kNormal);

  store->add_rejection("p", "invalid_result");
  store->add_rejection("p", "invalid_result");
  store->add_rejection("p", "lease_expired");

  const auto counts = store->rejections("p");
  CHECK(counts.at("invalid_result") == 2);
  CHECK(counts.at("lease_expired") == 1);
  CHECK(counts.size() == 2);
}

TEMPLATE_TEST_CASE("store_transaction_without_commit_leaves_no_trace", "[store]",
                   SqliteMemoryBackend, SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);

  {
    StoreTransaction tx(*store, Durability::kFull);
    store->insert_population(population("q"));
    store->insert_task(leased_task(0, "train", 10));
  }

  CHECK_FALSE(store->find_population("q"));
  CHECK(store->count_active_leases(0) == 0);
  CHECK(store->find_population("p"));
}

TEMPLATE_TEST_CASE("store_nested_rollback_undoes_only_its_step", "[store]", SqliteMemoryBackend,
                   SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);

  {
    StoreTransaction tx(*store, Durability::kNormal);
    store->begin_nested();
    store->insert_population(population("q"));
    store->commit_nested();
    store->begin_nested();
    store->insert_population(population("r"));
    store->rollback_nested();
    store->begin_nested();
    store->add_rejection("p", "conflict");
    store->commit_nested();
    tx.commit();
  }

  CHECK(store->find_population("q"));
  CHECK_FALSE(store->find_population("r"));
  CHECK(store->rejections("p").at("conflict") == 1);
}

TEMPLATE_TEST_CASE("store_nested_steps_vanish_with_their_rolled_back_transaction", "[store]",
                   SqliteMemoryBackend, SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);

  {
    StoreTransaction tx(*store, Durability::kNormal);
    store->begin_nested();
    store->insert_population(population("q"));
    store->commit_nested();
  }

  CHECK_FALSE(store->find_population("q"));
  CHECK(store->find_population("p"));
}

TEMPLATE_TEST_CASE("store_sync_runs_beside_a_writer_and_keeps_every_commit", "[store]",
                   SqliteMemoryBackend, SqliteFileBackend) {
  TestType backend;
  auto store = backend.open();
  seed(*store);
  std::atomic<bool> writing{true};
  int syncs = 0;
  std::thread syncer([&] {
    do {
      store->sync();
      ++syncs;
    } while (writing);
  });

  for (int i = 0; i < 30; ++i) {
    StoreTransaction tx(*store, Durability::kNormal);
    store->add_rejection("p", "conflict");
    tx.commit();
  }
  writing = false;
  syncer.join();
  store->sync();

  CHECK(syncs >= 1);
  CHECK(store->rejections("p").at("conflict") == 30);
}

TEST_CASE("sqlite_file_store_normal_commits_are_seen_by_another_connection_once_committed",
          "[store]") {
  SqliteFileBackend backend;
  auto writer = backend.open();
  seed(*writer);
  auto reader = backend.open();

  writer->begin(Durability::kNormal);
  writer->begin_nested();
  writer->insert_population(population("q"));
  writer->commit_nested();
  const bool seen_before_commit = reader->find_population("q").has_value();
  writer->commit();
  writer->sync();

  CHECK_FALSE(seen_before_commit);
  CHECK(reader->find_population("q"));
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
  {
    SqliteStore store(backend.path);
    StoreTransaction tx(store, Durability::kFull);
    store.insert_population(population("p"));
    tx.commit();
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
  RoundRecord closed = *round;
  closed.robust_json = R"({"capped":2})";
  StoreTransaction tx(migrated, Durability::kFull);
  migrated.update_round(closed);
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
