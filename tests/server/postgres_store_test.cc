// PostgresStore-only cases: what a start does to the servers already serving from the database
// (postgres_schema_setup.h). The operations are the shared suite's (store_*_test.cc,
// store_suite.h).
#include "server/store/postgres_store.h"

#include <libpq-fe.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

using Catch::Matchers::Contains;

// Population "p" with its round 0, and a chunk of its tasks (the first one leased).
void seed(Store& store) {
  {
    StoreTransaction tx(store, Durability::kFull);
    RoundRecord round0;
    round0.population_id = "p";
    store.create_population(test::test_population_record("p"), round0, {"p", 0, "etag", "model"});
    tx.commit();
  }
  StoreTransaction tx(store, Durability::kFull);  // the chunk is created by another connection
  REQUIRE(store.claim_task({"p", 0, TaskKind::kTrain, 5, 0, 10, "lease-hash"}));
  tx.commit();
}

// A connection of the test's own, beside the stores.
class Session {
 public:
  explicit Session(const std::string& url) : conn_(PQconnectdb(url.c_str())) {
    REQUIRE(PQstatus(conn_) == CONNECTION_OK);
  }
  ~Session() { PQfinish(conn_); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  // The first value the statement returns ("" when none); the error message when it fails.
  std::string run(const std::string& sql, bool* failed = nullptr) {
    pg_result* result = PQexec(conn_, sql.c_str());
    const ExecStatusType status = PQresultStatus(result);
    const bool ok = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
    std::string out = !ok                     ? PQresultErrorMessage(result)
                      : PQntuples(result) > 0 ? PQgetvalue(result, 0, 0)
                                              : "";
    PQclear(result);
    if (failed != nullptr) *failed = !ok;
    if (failed == nullptr && !ok) FAIL(sql + ": " + out);
    return out;
  }

 private:
  pg_conn* conn_;
};

std::string with_application_name(const std::string& url, const std::string& name) {
  return url + (url.find('?') == std::string::npos ? '?' : '&') + "application_name=" + name;
}

// Waits until `done` or until the connections named `name` wait for a lock — on the table
// `relation` when given, any lock otherwise: a bound for a broken start (30 s), not a timing.
// A start's wait for the schema's advisory lock is no wait on a table: every test process that
// creates a schema takes that lock, which the claim never holds.
void wait_until_done_or_waiting(Session& watcher, const std::string& name,
                                const std::atomic<bool>& done, const std::string& relation = "") {
  const std::string sql =
      relation.empty()
          ? "SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + name +
                "' AND wait_event_type = 'Lock'"
          : "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE a.application_name = '" +
                name + "' AND NOT l.granted AND l.relation = '" + relation + "'::regclass";
  for (int i = 0; i < 600 && !done; ++i) {
    if (watcher.run(sql) != "0") return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Retries fast, logged to `log`.
PostgresSchemaSetup quick_setup(std::ostringstream& log, int attempts) {
  PostgresSchemaSetup setup;
  setup.lock_timeout_s = 0.1;
  setup.attempts = attempts;
  setup.retry_pause_s = 0.01;
  setup.max_retry_pause_s = 0.05;
  setup.logger = std::make_shared<spdlog::logger>(
      "schema-setup-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  return setup;
}

TEST_CASE("postgres_a_start_beside_an_open_claim_neither_waits_for_it_nor_breaks_it",
          "[store][postgres]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  seed(*first);
  Session claimer(backend.url());
  Session watcher(backend.url());
  const std::string starter_name = "fedleaf_start_" + std::to_string(::getpid());

  // What claim_task's transaction holds, open: a task row, the lease it inserted (ROW EXCLUSIVE
  // on leases), and next the task's update (ROW EXCLUSIVE on tasks).
  claimer.run("BEGIN");
  const std::string task = claimer.run(
      "SELECT id FROM tasks WHERE lease_id = 0 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED");
  claimer.run("INSERT INTO leases (task_id, token_hash, expires_at) VALUES (" + task +
              ", 'other-lease', 10)");
  std::atomic<bool> started{false};
  std::string start_error;
  std::thread starter([&] {
    try {
      PostgresStore second(with_application_name(backend.url(), starter_name));
    } catch (const std::exception& e) {
      start_error = e.what();
    }
    started = true;
  });
  wait_until_done_or_waiting(watcher, starter_name, started);  // a start that locks tables waits
  const bool started_beside_the_claim = started;
  bool update_failed = false;
  const std::string update = claimer.run(
      "UPDATE tasks SET lease_id = 1, lease_expires_at = 10 WHERE id = " + task, &update_failed);
  claimer.run(update_failed ? "ROLLBACK" : "COMMIT");
  starter.join();

  CHECK(started_beside_the_claim);
  CHECK(start_error == "");
  INFO(update);
  CHECK_FALSE(update_failed);
}

// A migration does lock tables: its wait for leases, behind an open claim, is part of a lock cycle
// once the claim updates its task. The start gives up (lock_timeout, below deadlock_timeout) and
// retries after the claim commits; the claim never fails. The claim updates once the start waits
// for leases itself: a start that waits for the schema's advisory lock (another process creating
// its schema) would take the claim's tables after its commit, with no cycle and no retry.
TEST_CASE("postgres_a_migration_that_loses_a_lock_race_to_a_claim_retries_and_the_claim_goes_on",
          "[store][postgres]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  seed(*first);
  Session claimer(backend.url());
  Session watcher(backend.url());
  // Version 2: its migration (2 → 3) alters leases, which the claim below holds.
  watcher.run("UPDATE schema_version SET version = 2");
  const std::string starter_name = "fedleaf_migrate_" + std::to_string(::getpid());
  std::ostringstream log;
  const PostgresSchemaSetup setup = quick_setup(log, 100);

  claimer.run("BEGIN");
  const std::string task = claimer.run(
      "SELECT id FROM tasks WHERE lease_id = 0 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED");
  claimer.run("INSERT INTO leases (task_id, token_hash, expires_at) VALUES (" + task +
              ", 'other-lease', 10)");
  std::atomic<bool> started{false};
  std::string start_error;
  std::thread starter([&] {
    try {
      PostgresStore second(with_application_name(backend.url(), starter_name), setup);
    } catch (const std::exception& e) {
      start_error = e.what();
    }
    started = true;
  });
  wait_until_done_or_waiting(watcher, starter_name, started, "leases");
  bool update_failed = false;
  const std::string update = claimer.run(
      "UPDATE tasks SET lease_id = 1, lease_expires_at = 10 WHERE id = " + task, &update_failed);
  claimer.run(update_failed ? "ROLLBACK" : "COMMIT");
  starter.join();

  INFO(update);
  CHECK_FALSE(update_failed);
  CHECK(start_error == "");
  CHECK_THAT(log.str(), Contains("event=schema_setup_retry step=migrate attempt=1"));
  CHECK(watcher.run("SELECT version FROM schema_version") ==
        std::to_string(PostgresStore::kSchemaVersion));
}

// The advisory lock another start holds (here: never released) is a lock race too: retried,
// then a failure that says so.
TEST_CASE("postgres_a_start_whose_schema_lock_is_never_granted_fails_naming_its_attempts",
          "[store][postgres]") {
  PostgresBackend backend;
  const std::string url = backend.url();  // an empty schema: this start creates it
  if (url.empty()) return;
  Session holder(url);
  holder.run("SELECT pg_advisory_lock(7240113)");
  std::ostringstream log;

  CHECK_THROWS_WITH(PostgresStore(url, quick_setup(log, 3)),
                    Contains("could not create the schema: 3 attempts each lost a lock race"));
  holder.run("SELECT pg_advisory_unlock(7240113)");
  CHECK_THAT(log.str(), Contains("attempt=2 attempts=3"));
  CHECK(PostgresStore(url, quick_setup(log, 3)).shared());
}

TEST_CASE("postgres_a_start_on_a_newer_schema_fails_at_once_naming_both_versions",
          "[store][postgres]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  Session admin(backend.url());
  const int newer = PostgresStore::kSchemaVersion + 1;
  admin.run("UPDATE schema_version SET version = " + std::to_string(newer));
  std::ostringstream log;

  CHECK_THROWS_WITH(PostgresStore(backend.url(), quick_setup(log, 3)),
                    Contains("schema version is " + std::to_string(newer) + ", this server's is " +
                             std::to_string(PostgresStore::kSchemaVersion)) &&
                        Contains("a newer server migrated it"));
  CHECK(log.str().empty());
}

// Version 2 leases have no refused_sha256: migrated, a refusal sent again is counted once.
TEST_CASE("postgres_a_version_2_database_is_migrated_and_counts_a_refusal_once",
          "[store][postgres]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  seed(*first);
  first.reset();
  Session admin(backend.url());
  admin.run("ALTER TABLE leases DROP COLUMN refused_sha256");
  admin.run("ALTER TABLE populations DROP COLUMN server_optimizer");
  admin.run("ALTER TABLE populations DROP COLUMN buffered");
  admin.run("DROP TABLE optimizer_states");
  admin.run("UPDATE schema_version SET version = 2");
  const std::string lease = admin.run("SELECT min(id) FROM leases");

  auto migrated = backend.open();
  StoreTransaction tx(*migrated, Durability::kFull);
  const RefusedUpload upload{"p", "lease_expired", std::stoll(lease), "sha"};
  const bool counted = migrated->add_rejection(upload);
  const bool counted_again = migrated->add_rejection(upload);
  tx.commit();

  CHECK(counted);
  CHECK_FALSE(counted_again);
  CHECK(admin.run("SELECT version FROM schema_version") ==
        std::to_string(PostgresStore::kSchemaVersion));
}

// Version 3 has no server optimizers: migrated, its populations run FedAvg ("") and its closes
// may store an optimizer's state.
TEST_CASE("postgres_a_version_3_database_is_migrated_and_its_populations_run_fedavg",
          "[store][postgres]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  seed(*first);
  first.reset();
  Session admin(backend.url());
  admin.run("ALTER TABLE populations DROP COLUMN server_optimizer");
  admin.run("ALTER TABLE populations DROP COLUMN buffered");
  admin.run("DROP TABLE optimizer_states");
  admin.run("UPDATE schema_version SET version = 3");

  auto migrated = backend.open();
  CHECK(migrated->find_population("p")->settings.server_optimizer_json.empty());
  StoreTransaction tx(*migrated, Durability::kFull);
  REQUIRE(migrated->lock_open_round("p", 0));
  RoundCloseWrite close;
  close.closed = *migrated->find_round("p", 0);
  close.population = *migrated->find_population("p");
  close.population.current_round = 1;
  close.opened = RoundRecord{};
  close.opened->population_id = "p";
  close.opened->number = 1;
  close.optimizer_state = OptimizerStateRecord{"p", 1, "etag-state-1", "state-1"};
  migrated->close_round(close);
  tx.commit();
  CHECK(migrated->find_optimizer_state("p", 1)->bytes == "state-1");
  CHECK(admin.run("SELECT version FROM schema_version") ==
        std::to_string(PostgresStore::kSchemaVersion));
}

// Version 5 leases tasks through tasks_by_expiry and has foreign keys on tasks, leases and
// results: migrated, tasks_to_lease (whose last column, id, is the claim's tie-break) replaces
// the index, the keys are gone, and claims lease the never-leased task with the lowest id first,
// then an expired one.
TEST_CASE(
    "postgres_a_version_5_database_is_migrated_to_the_claim_ordered_index_without_foreign_keys",
    "[store][postgres]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  seed(*first);  // task 1 leased until 10, tasks 2..5 never leased
  first.reset();
  Session admin(backend.url());
  admin.run("DROP INDEX tasks_to_lease");
  admin.run(
      "CREATE INDEX tasks_by_expiry ON tasks (population_id, round, kind, state, "
      "lease_expires_at)");
  const char* foreign_keys =
      "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conrelid IN "
      "('tasks'::regclass, 'leases'::regclass, 'results'::regclass)";
  CHECK(admin.run(foreign_keys) == "0");  // none in a database version 6 created
  admin.run("ALTER TABLE tasks ADD FOREIGN KEY (population_id, round) REFERENCES rounds");
  admin.run("ALTER TABLE leases ADD FOREIGN KEY (task_id) REFERENCES tasks(id)");
  admin.run("ALTER TABLE results ADD FOREIGN KEY (task_id) REFERENCES tasks(id)");
  admin.run("ALTER TABLE results ADD FOREIGN KEY (population_id, round) REFERENCES rounds");
  CHECK(admin.run(foreign_keys) == "4");
  admin.run("UPDATE schema_version SET version = 5");

  auto migrated = backend.open();
  CHECK(admin.run(foreign_keys) == "0");
  CHECK(admin.run("SELECT version FROM schema_version") ==
        std::to_string(PostgresStore::kSchemaVersion));
  CHECK(admin.run("SELECT count(*) FROM pg_indexes WHERE indexname = 'tasks_by_expiry' AND "
                  "schemaname = current_schema()") == "0");
  CHECK(admin
            .run("SELECT indexdef FROM pg_indexes WHERE indexname = 'tasks_to_lease' AND "
                 "schemaname = current_schema()")
            .find("(population_id, round, kind, state, lease_expires_at, id)") !=
        std::string::npos);
  std::vector<std::int64_t> leased;
  for (int i = 0; i < 5; ++i) {
    StoreTransaction tx(*migrated, Durability::kFull);
    const auto claimed =
        migrated->claim_task({"p", 0, TaskKind::kTrain, 5, 11, 20, "hash-" + std::to_string(i)});
    tx.commit();
    REQUIRE(claimed);
    leased.push_back(claimed->task_id);
  }
  const std::int64_t first_id = std::stoll(admin.run("SELECT min(id) FROM tasks"));
  // Never leased (lease_expires_at 0) in id order, then task 1, whose lease expired at 10.
  CHECK(leased == std::vector<std::int64_t>{first_id + 1, first_id + 2, first_id + 3, first_id + 4,
                                            first_id});
}

// Version 6 has round_shards' foreign key to rounds: migrated, it is gone, and reports counted
// in one transaction (the second and third increment a shard row version their own transaction
// wrote, where the key was checked) are the round's, each with its task completed once.
TEST_CASE("postgres_a_version_6_database_is_migrated_without_the_shard_rows_foreign_key",
          "[store][postgres]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  seed(*first);  // task 1 leased until 10, tasks 2..5 never leased
  first.reset();
  Session admin(backend.url());
  const char* shard_keys =
      "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conrelid = "
      "'round_shards'::regclass";
  CHECK(admin.run(shard_keys) == "0");  // none in a database version 7 created
  admin.run("ALTER TABLE round_shards ADD FOREIGN KEY (population_id, round) REFERENCES rounds");
  CHECK(admin.run(shard_keys) == "1");
  admin.run("UPDATE schema_version SET version = 6");

  auto migrated = backend.open();
  CHECK(admin.run(shard_keys) == "0");
  CHECK(admin.run("SELECT version FROM schema_version") ==
        std::to_string(PostgresStore::kSchemaVersion));
  StoreTransaction tx(*migrated, Durability::kFull);
  std::vector<AcceptOutcome> outcomes;
  for (int i = 0; i < 3; ++i) {
    const auto claimed =
        migrated->claim_task({"p", 0, TaskKind::kTrain, 5, 11, 20, "hash-" + std::to_string(i)});
    REQUIRE(claimed);
    AcceptRequest report{
        claimed->task_id, claimed->lease_id, "sha-" + std::to_string(i), 12, "bytes", {}, nullptr};
    report.delta.examples = 2;
    outcomes.push_back(migrated->accept_result(report));
    // The same report again under the lock its own transaction holds: already done.
    CHECK(migrated->accept_result(report).status == AcceptStatus::kRepeated);
  }
  tx.commit();
  for (int i = 0; i < 3; ++i) {
    CHECK(outcomes[i].status == AcceptStatus::kAccepted);
    CHECK(outcomes[i].round.reports == i + 1);
    CHECK(outcomes[i].task.state == TaskState::kDone);
  }
  CHECK(migrated->find_round("p", 0)->reports == 3);
  CHECK(migrated->find_round("p", 0)->examples == 6);
  CHECK(migrated->list_results("p", 0, 0).size() == 3);
}

}  // namespace

// A version 9 database has no privacy columns: migrated, its populations are not private, and a
// private one keeps its section and secret.
TEST_CASE("postgres_a_version_9_database_is_migrated_and_keeps_a_private_populations_secret",
          "[store][postgres]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  seed(*first);
  first.reset();
  Session admin(backend.url());
  admin.run("ALTER TABLE populations DROP COLUMN privacy");
  admin.run("ALTER TABLE populations DROP COLUMN privacy_secret");
  admin.run("UPDATE schema_version SET version = 9");

  auto migrated = backend.open();
  CHECK(admin.run("SELECT version FROM schema_version") ==
        std::to_string(PostgresStore::kSchemaVersion));
  PopulationRecord p = *migrated->find_population("p");
  CHECK(p.settings.privacy_json.empty());
  CHECK(p.privacy_secret.empty());
  p.id = "q";
  p.settings.privacy_json = R"({"mechanism":"dp_ftrl_tree"})";
  p.privacy_secret = std::string(64, 'b');
  RoundRecord round0 = *migrated->find_round("p", 0);
  round0.population_id = "q";
  {
    StoreTransaction tx(*migrated, Durability::kFull);
    migrated->create_population(p, round0, ModelRecord{"q", 0, "etag-q", "model q"});
    tx.commit();
  }
  migrated.reset();
  auto reopened = backend.open();
  CHECK(reopened->find_population("q")->settings.privacy_json == R"({"mechanism":"dp_ftrl_tree"})");
  CHECK(reopened->find_population("q")->privacy_secret == std::string(64, 'b'));
}

}  // namespace fedleaf::server
