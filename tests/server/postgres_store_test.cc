// PostgresStore-only cases: what a start does to the servers already serving from the database
// (postgres_schema_setup.h). The operations are the shared suite's (store_test.cc).
#include "server/store/postgres_store.h"

#include <libpq-fe.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

// Population "p" with its round 0, and a chunk of its tasks (the first one leased).
void seed(Store& store) {
  {
    StoreTransaction tx(store, Durability::kFull);
    PopulationRecord p;
    p.id = "p";
    p.plan_json = "{}";
    RoundRecord round0;
    round0.population_id = "p";
    store.create_population(p, round0, {"p", 0, "etag", "model"});
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
  // Until the start is done or waits for a lock (a start that locks tables waits for this
  // claim's): a bound for a broken start, not a timing.
  for (int i = 0; i < 600 && !started; ++i) {
    const std::string waiting =
        watcher.run("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" +
                    starter_name + "' AND wait_event_type = 'Lock'");
    if (waiting != "0") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
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

}  // namespace
}  // namespace fedleaf::server
