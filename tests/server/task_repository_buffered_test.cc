// TaskRepository with a buffered population ("mode": "buffered", FedBuff): train tasks whenever
// fewer than `concurrency` are out, each report folded into the open version with num_examples ×
// 1/(1+s)^0.5 where s is what the server recorded (versions published since it handed the task
// out), a version published every K reports, a report staler than max_staleness refused with
// 409 and nothing changed, and a restart in the middle of a buffer folding each stored report
// once with its weight.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "core/aggregation/round/buffered_spec.h"
#include "core/error.h"
#include "server/api/wire_json.h"
#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "tests/core/error_matchers.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

using test::train_result;

// kTestPlan's model without the robust defaults (no clip, every row kept, no example cap), so
// the reference below is the plain FedBuff rule.
const char* kPlainPlan =
    R"({"model": {"inputs": {"tokens": "sparse_ids"},
                  "layers": [{"type": "embedding_bag", "name": "emb", "input": "tokens",
                              "vocab": 10, "dim": 2, "combiner": "mean"},
                             {"type": "dense", "name": "out", "units": 2}],
                  "loss": "softmax_cross_entropy"},
        "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}, "epochs": 1,
                  "batch_size": 4},
        "max_examples_per_report": "off",
        "updates": {"emb/weight": {"encoding": "row_sparse", "clip": "off",
                                   "aggregator": "mean_over_contributors",
                                   "min_contributors": "off"},
                    "out/weight": {"encoding": "dense", "aggregator": "weighted_mean",
                                   "clip": "off"}}})";

// K = 2, concurrency 3, max_staleness 1, polynomial 0.5; 3 versions.
PopulationSpec buffered_spec(const std::string& id) {
  PopulationSpec spec = test::test_spec(id, 3, 2, 2);
  spec.plan_json = kPlainPlan;
  core::BufferedSpec b;
  b.buffer_size = 2;
  b.concurrency = 3;
  b.max_staleness = 1;
  spec.settings.buffered_json = core::buffered_spec_json(b);
  spec.settings.train_tasks_per_round = 3;
  return spec;
}

struct Harness {
  SqliteStore store{":memory:"};
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo{store, clock, metrics, TaskRepositoryOptions{}};
};

TaskAssignment claim(TaskRepository& repo, const CreatedPopulation& p) {
  ClaimOutcome c = repo.claim(p.id, p.client_token);
  REQUIRE(std::holds_alternative<TaskAssignment>(c));
  return std::get<TaskAssignment>(c);
}

int upload(TaskRepository& repo, const TaskAssignment& t, float dense_value, int examples) {
  return repo
      .upload(t.task_id, t.lease_token, train_result({1}, dense_value, dense_value, examples))
      .status;
}

std::vector<float> out_weight(TaskRepository& repo, const std::string& id, int version) {
  return test::decode_dense(*repo.model(id, version).bytes).at("out/weight");
}

// The staleness counts the close of `version` recorded (status history), {} when none.
std::map<std::uint64_t, std::uint64_t> staleness_of(const PopulationStatus& status, int version) {
  const auto& robust = status.history.at(static_cast<std::size_t>(version)).robust;
  return robust.staleness ? robust.staleness->counts : std::map<std::uint64_t, std::uint64_t>{};
}

// A connection of its own to the test's schema that holds a task's row lock until release():
// an accept of that task waits for it after its read of the open version.
struct TaskRowLock {
  pg_conn* conn;
  TaskRowLock(const std::string& url, std::int64_t task_id) : conn(PQconnectdb(url.c_str())) {
    REQUIRE(PQstatus(conn) == CONNECTION_OK);
    exec("BEGIN");
    exec("SELECT 1 FROM tasks WHERE id = " + std::to_string(task_id) + " FOR UPDATE");
  }
  TaskRowLock(const TaskRowLock&) = delete;
  TaskRowLock& operator=(const TaskRowLock&) = delete;
  ~TaskRowLock() { PQfinish(conn); }
  void exec(const std::string& sql) {
    pg_result* r = PQexec(conn, sql.c_str());
    const ExecStatusType status = PQresultStatus(r);
    PQclear(r);
    REQUIRE((status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK));
  }
  // Returns once another backend waits for a lock in a statement on `table` (polled; bounded
  // by a generous limit, after which the test goes on and checks what every order must give).
  void wait_for_a_waiter(const std::string& table) {
    for (int i = 0; i < 6000; ++i) {
      pg_result* r = PQexec(conn, ("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type "
                                   "= 'Lock' AND query LIKE '%" +
                                   table + "%'")
                                      .c_str());
      const bool waiting =
          PQresultStatus(r) == PGRES_TUPLES_OK && std::string(PQgetvalue(r, 0, 0)) != "0";
      PQclear(r);
      if (waiting) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  void release() { exec("COMMIT"); }
};

}  // namespace

TEST_CASE("a_buffered_population_folds_reports_with_their_staleness_weight_every_k",
          "[repository][buffered]") {
  Harness h;
  const CreatedPopulation p = h.repo.create_population(buffered_spec("p"));
  // Three tasks out at once on version 0; a fourth waits for a free slot.
  const TaskAssignment a = claim(h.repo, p), b = claim(h.repo, p), c = claim(h.repo, p);
  CHECK(a.round == 0);
  CHECK(std::holds_alternative<RetryLater>(h.repo.claim(p.id, p.client_token)));
  CHECK(status_json(h.repo.status("p"))["tasks_out"] == 3);

  REQUIRE(upload(h.repo, a, 0.2f, 3) == 201);
  CHECK(h.repo.status("p").round.number == 0);  // one report of K = 2
  const TaskAssignment d = claim(h.repo, p);    // a's slot is free again
  CHECK(d.round == 0);
  REQUIRE(upload(h.repo, b, -0.4f, 1) == 201);  // K reports: version 1 published
  CHECK(h.repo.status("p").round.number == 1);

  const std::vector<float> v0 = out_weight(h.repo, "p", 0);
  const std::vector<float> v1 = out_weight(h.repo, "p", 1);
  for (std::size_t j = 0; j < v0.size(); ++j) {
    CHECK(v1[j] == Approx(v0[j] + (3 * 0.2 + 1 * -0.4) / 4.0).margin(1e-6));
  }

  // c and d were handed out on version 0: staleness 1 (the server's record), weight 1/sqrt(2).
  const TaskAssignment e = claim(h.repo, p);
  CHECK(e.round == 1);
  REQUIRE(upload(h.repo, c, 0.6f, 2) == 201);
  REQUIRE(upload(h.repo, e, 0.1f, 2) == 201);
  CHECK(h.repo.status("p").round.number == 2);
  const double w = 1.0 / std::sqrt(2.0);
  const std::vector<float> v2 = out_weight(h.repo, "p", 2);
  for (std::size_t j = 0; j < v0.size(); ++j) {
    const double want = v1[j] + (2 * w * 0.6 + 2 * 1.0 * 0.1) / (2 * w + 2 * 1.0);
    CHECK(v2[j] == Approx(want).margin(1e-6));
  }

  // d is now 2 versions old (> max_staleness 1): 409 naming its staleness, nothing folded.
  const RoundRecord before = h.repo.status("p").round;
  CHECK_THROWS_MATCHES(upload(h.repo, d, 5.0f, 100), Conflict,
                       test::MessageContains("staleness 2 exceeds max_staleness 1"));
  const PopulationStatus after = h.repo.status("p");
  CHECK(after.round.number == 2);
  CHECK(after.round.reports == before.reports);
  CHECK(after.rejections.at("stale") == 1);
  CHECK(h.metrics.render(0, 0).find("fedleaf_upload_rejections_total{reason=\"stale\"} 1") !=
        std::string::npos);

  const nlohmann::json status = status_json(after);
  CHECK(status["mode"] == "buffered");
  CHECK(status["buffered"]["buffer_size"] == 2);
  CHECK(status["buffered"]["staleness_weight"]["weight"] == "polynomial");

  // Each closed version records its reports' staleness from the task records: version 0 folded
  // a and b (handed out on 0), version 1 folded c (handed out on 0) and e (on 1); the refused d
  // is in none, and the open version 2 has no count yet.
  using Counts = std::map<std::uint64_t, std::uint64_t>;
  CHECK(staleness_of(after, 0) == Counts{{0, 2}});
  CHECK(staleness_of(after, 1) == Counts{{0, 1}, {1, 1}});
  CHECK(staleness_of(after, 2).empty());
  CHECK(status["history"][1]["staleness"] ==
        nlohmann::json{{"mean", 0.5}, {"max", 1}, {"counts", {{"0", 1}, {"1", 1}}}});
  CHECK_FALSE(status["history"][2].contains("staleness"));
  CHECK(status["tasks_out"] == 0);  // d's lease ended with its refusal
}

TEST_CASE("a_synchronous_populations_status_has_no_mode", "[repository][buffered]") {
  Harness h;
  const CreatedPopulation p = h.repo.create_population(test::test_spec("s", 1, 1, 1));
  REQUIRE(upload(h.repo, claim(h.repo, p), 0.1f, 2) == 201);
  const PopulationStatus status = h.repo.status("s");
  const nlohmann::json body = status_json(status);
  CHECK_FALSE(body.contains("mode"));
  CHECK_FALSE(body.contains("tasks_out"));
  CHECK_FALSE(status.tasks_out);
  // A synchronous round's close records no staleness.
  REQUIRE(status.history.at(0).record.status == RoundStatus::kClosed);
  CHECK_FALSE(status.history.at(0).robust.staleness);
  CHECK_FALSE(body["history"][0].contains("staleness"));
}

// A leaf that vanishes with a task of an older version costs its lease: when the lease expires,
// the slot is free, and the claim parked for one (long poll) is woken by the next tick and gets
// a task of the open version. The tick before the expiry, and the one after the slot is taken
// again, wake nobody.
TEST_CASE("a_parked_claim_is_woken_when_a_lease_of_an_older_version_expires",
          "[repository][buffered]") {
  Harness h;
  const CreatedPopulation p = h.repo.create_population(buffered_spec("p"));
  const double start = h.clock.now();
  const TaskAssignment a = claim(h.repo, p), b = claim(h.repo, p);
  const TaskAssignment vanished = claim(h.repo, p);  // its leaf never reports
  REQUIRE(upload(h.repo, a, 0.2f, 1) == 201);
  REQUIRE(upload(h.repo, b, 0.2f, 1) == 201);  // version 1
  h.clock.advance(1);
  const TaskAssignment d = claim(h.repo, p), e = claim(h.repo, p);
  CHECK(d.round == 1);
  ClaimOutcome full = h.repo.claim(p.id, p.client_token);  // three out: vanished, d, e
  REQUIRE(std::holds_alternative<RetryLater>(full));
  h.repo.commit_batch();
  int woken = 0;
  h.repo.waiters().park(p.id, std::get<RetryLater>(full).wake_epoch, [&] { ++woken; });

  h.repo.tick();
  CHECK(woken == 0);
  h.clock.set(start + 10.5);  // vanished's lease (10 s, version 0) expired; d's and e's not
  h.repo.tick();
  CHECK(woken == 1);
  const TaskAssignment f = claim(h.repo, p);
  CHECK(f.round == 1);
  CHECK(f.task_id != vanished.task_id);

  ClaimOutcome again = h.repo.claim(p.id, p.client_token);
  REQUIRE(std::holds_alternative<RetryLater>(again));
  h.repo.waiters().park(p.id, std::get<RetryLater>(again).wake_epoch, [&] { ++woken; });
  h.repo.tick();  // nothing expired since: the parked claim sleeps on
  CHECK(woken == 1);
  h.repo.waiters().notify(p.id);
}

// A restart in the middle of a buffer: the version's stored reports are folded again, each with
// the staleness weight of its task's round, so the published version is the uninterrupted one
// bit for bit.
TEST_CASE("a_restart_in_the_middle_of_a_buffer_publishes_the_uninterrupted_version",
          "[repository][buffered]") {
  FakeClock clock;
  ServerMetrics metrics;
  // Runs the sequence on the stores `open` gives, opening a new one (a new server process) before
  // the last report when `restart`.
  const auto run = [&](const std::function<std::unique_ptr<Store>()>& open, bool restart) {
    std::unique_ptr<Store> store = open();
    std::optional<TaskRepository> repo;
    repo.emplace(*store, clock, metrics, TaskRepositoryOptions{});
    const CreatedPopulation p = repo->create_population(buffered_spec("p"));
    const TaskAssignment a = claim(*repo, p), b = claim(*repo, p), c = claim(*repo, p);
    REQUIRE(upload(*repo, a, 0.3f, 2) == 201);
    REQUIRE(upload(*repo, b, -0.2f, 5) == 201);  // version 1
    const TaskAssignment d = claim(*repo, p);
    REQUIRE(upload(*repo, c, 0.7f, 4) == 201);  // staleness 1, in version 1's buffer
    if (restart) {
      repo.reset();
      store.reset();
      store = open();
      repo.emplace(*store, clock, metrics, TaskRepositoryOptions{});
      CHECK(repo->status("p").round.reports == 1);
    }
    REQUIRE(upload(*repo, d, -0.5f, 3) == 201);  // staleness 0: version 2
    // Version 1's staleness, counted from the stored results and their tasks at its close.
    return std::pair{*repo->model("p", 2).bytes, staleness_of(repo->status("p"), 1)};
  };
  const auto uninterrupted = run([] { return std::make_unique<SqliteStore>(":memory:"); }, false);
  CHECK(uninterrupted.second == std::map<std::uint64_t, std::uint64_t>{{0, 1}, {1, 1}});
  const SqliteFileBackend backend;
  CHECK(run([&] { return std::make_unique<SqliteStore>(backend.path); }, true) == uninterrupted);
}

// Server B publishes version 1 (the K-th report) while server A accepts a report of version 0:
// A's accept waits for B's close and then finds version 0 closed. The report is not lost (410):
// it folds into version 1 with its staleness counted against version 1 (s = 1, weight
// 1/sqrt(2)), exactly once. Runs when FEDLEAF_TEST_PG_URL is set.
TEST_CASE("a_report_racing_the_publish_of_its_version_folds_into_the_next_version",
          "[repository][buffered][shared]") {
  PostgresBackend backend;
  FakeClock clock;
  std::unique_ptr<Store> store_a = backend.open();
  if (!store_a) return;
  std::unique_ptr<Store> store_b = backend.open();
  ServerMetrics metrics_a, metrics_b;
  TaskRepository a(*store_a, clock, metrics_a, TaskRepositoryOptions{});
  TaskRepository b(*store_b, clock, metrics_b, TaskRepositoryOptions{});
  const CreatedPopulation p = a.create_population(buffered_spec("p"));
  a.commit_batch();
  const TaskAssignment t1 = claim(a, p), t2 = claim(a, p), t3 = claim(a, p);
  a.commit_batch();
  REQUIRE(upload(a, t1, 0.2f, 3) == 201);  // A's shard row of version 0
  a.commit_batch();
  // A reads version 0 open (1 report of K = 2) and folds t3, then waits for t3's row; meanwhile
  // B accepts the K-th report and publishes version 1.
  TaskRowLock row(backend.url(), t3.task_id);
  int racing_status = 0;
  std::thread racer([&] {
    try {
      racing_status = upload(a, t3, 0.6f, 2);
      a.commit_batch();
    } catch (const Gone&) {
      racing_status = 410;  // the report lost
    }
  });
  row.wait_for_a_waiter("FROM tasks");
  REQUIRE(upload(b, t2, -0.4f, 1) == 201);  // K reports: version 1
  b.commit_batch();
  row.release();
  racer.join();
  CHECK(racing_status == 201);
  CHECK(a.status("p").round.number == 1);
  CHECK(a.status("p").round.reports == 1);  // t3, in version 1's buffer

  const TaskAssignment t4 = claim(b, p);
  CHECK(t4.round == 1);
  REQUIRE(upload(b, t4, 0.1f, 2) == 201);  // version 2
  b.commit_batch();
  const PopulationStatus status = a.status("p");
  CHECK(status.round.number == 2);
  CHECK(status.history[0].record.reports == 2);
  CHECK(status.history[1].record.reports == 2);
  CHECK(status.rejections.count("round_closed") == 0);

  const std::vector<float> v0 = out_weight(a, "p", 0);
  const std::vector<float> v1 = out_weight(a, "p", 1);
  const std::vector<float> v2 = out_weight(a, "p", 2);
  const double w = 1.0 / std::sqrt(2.0);
  for (std::size_t j = 0; j < v0.size(); ++j) {
    CHECK(v1[j] == Approx(v0[j] + (3 * 0.2 + 1 * -0.4) / 4.0).margin(1e-6));
    CHECK(v2[j] == Approx(v1[j] + (2 * w * 0.6 + 2 * 0.1) / (2 * w + 2)).margin(1e-6));
  }
}

// Three servers on one PostgreSQL store run a buffered population, each claim and upload through
// the next server in turn (so a report is often accepted by another server than the one that
// handed its task out, and versions are published by different servers): exactly one server
// publishes each version, every report is in exactly one version, and the versions are a single
// server's bit for bit. Runs when FEDLEAF_TEST_PG_URL is set.
TEST_CASE("three_servers_on_postgres_publish_each_buffered_version_once_bit_for_bit",
          "[repository][buffered][shared]") {
  PostgresBackend backend;
  FakeClock clock;
  struct Instance {
    std::unique_ptr<Store> store;
    ServerMetrics metrics;
    std::unique_ptr<TaskRepository> repo;
  };
  std::vector<std::unique_ptr<Instance>> servers;
  for (int i = 0; i < 3; ++i) {
    std::unique_ptr<Store> store = backend.open();
    if (!store) return;
    auto instance = std::make_unique<Instance>();
    instance->store = std::move(store);
    instance->repo = std::make_unique<TaskRepository>(*instance->store, clock, instance->metrics,
                                                      TaskRepositoryOptions{});
    servers.push_back(std::move(instance));
  }
  SqliteStore single_store(":memory:");
  ServerMetrics single_metrics;
  TaskRepository single(single_store, clock, single_metrics, TaskRepositoryOptions{});
  PopulationSpec spec = buffered_spec("p");
  spec.settings.rounds = 4;
  const CreatedPopulation shared = servers[0]->repo->create_population(spec);
  const CreatedPopulation alone = single.create_population(spec);
  servers[0]->repo->commit_batch();
  servers[0]->store->sync();

  // As in server_crash.test.mjs: c folds at staleness 1, e is refused at staleness 2.
  struct Step {
    bool claim;
    char task;
    int expected;  // the version a claim gets, or the upload's status
  };
  const std::vector<Step> script = {
      {true, 'a', 0},    {true, 'b', 0},    {true, 'c', 0},    {false, 'a', 201}, {false, 'b', 201},
      {true, 'd', 1},    {true, 'e', 1},    {false, 'c', 201}, {false, 'd', 201}, {true, 'f', 2},
      {false, 'f', 201}, {true, 'g', 2},    {false, 'g', 201}, {false, 'e', 409}, {true, 'h', 3},
      {true, 'i', 3},    {false, 'h', 201}, {false, 'i', 201}};
  std::map<char, TaskAssignment> shared_tasks, single_tasks;
  for (std::size_t i = 0; i < script.size(); ++i) {
    const Step& step = script[i];
    Instance& server = *servers[i % 3];
    INFO("step " << i << " task " << step.task);
    if (step.claim) {
      shared_tasks[step.task] = claim(*server.repo, shared);
      single_tasks[step.task] = claim(single, alone);
      CHECK(shared_tasks[step.task].round == step.expected);
      CHECK(single_tasks[step.task].round == step.expected);
    } else {
      const float value = 0.05f * static_cast<float>(step.task - 'a' + 1);
      const int examples = 1 + (step.task - 'a') % 4;
      if (step.expected == 409) {
        CHECK_THROWS_AS(upload(*server.repo, shared_tasks[step.task], value, examples), Conflict);
        CHECK_THROWS_AS(upload(single, single_tasks[step.task], value, examples), Conflict);
      } else {
        CHECK(upload(*server.repo, shared_tasks[step.task], value, examples) == step.expected);
        CHECK(upload(single, single_tasks[step.task], value, examples) == step.expected);
      }
    }
    server.repo->commit_batch();
    server.store->sync();
  }
  int closes = 0;
  for (auto& server : servers) {
    const std::string text = server->metrics.render(0, 0);
    const std::string key = "fedleaf_round_duration_seconds_count ";
    const auto at = text.find(key) + key.size();
    closes += std::stoi(text.substr(at, text.find('\n', at) - at));
  }
  CHECK(closes == 4);  // one publisher per version
  for (int version = 1; version <= 4; ++version) {
    INFO("version " << version);
    for (auto& server : servers) {
      CHECK(server->repo->model("p", version).etag == single.model("p", version).etag);
    }
  }
  const PopulationStatus status = servers[1]->repo->status("p");
  CHECK(status.record.state == RunState::kFinished);
  CHECK(status.rejections.at("stale") == 1);
  // Each version's staleness, recorded by whichever server published it from every server's
  // results, is the single server's: c folded at staleness 1 into version 1, the rest at 0.
  const PopulationStatus single_status = single.status("p");
  for (int version = 0; version < 4; ++version) {
    INFO("version " << version);
    CHECK(status.history[static_cast<std::size_t>(version)].record.reports == 2);
    CHECK(staleness_of(status, version) == staleness_of(single_status, version));
    CHECK(staleness_of(status, version) ==
          (version == 1 ? std::map<std::uint64_t, std::uint64_t>{{0, 1}, {1, 1}}
                        : std::map<std::uint64_t, std::uint64_t>{{0, 2}}));
  }
}

}  // namespace fedleaf::server
