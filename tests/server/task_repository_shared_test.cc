// Several TaskRepository instances (several servers) on one shared store (PostgreSQL): each
// accepts uploads, any closes a round, exactly once, and the published model is the single
// server's, bit for bit. Runs when FEDLEAF_TEST_PG_URL is set (store_backends.h).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "server/api/wire_json.h"
#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "server/util/sha256.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

using test::test_spec;
using test::train_result;

struct Instance {
  std::unique_ptr<Store> store;
  ServerMetrics metrics;
  std::unique_ptr<TaskRepository> repo;
  Instance(std::unique_ptr<Store> s, const Clock& clock) : store(std::move(s)) {
    repo = std::make_unique<TaskRepository>(*store, clock, metrics, TaskRepositoryOptions{});
  }
  // What GroupCommit does after every answer (a shared store's row locks last until then).
  void commit() {
    repo->commit_batch();
    store->sync();
  }
  TaskAssignment claim(const CreatedPopulation& p) {
    ClaimOutcome outcome = repo->claim(p.id, p.client_token);
    commit();
    REQUIRE(std::holds_alternative<TaskAssignment>(outcome));
    return std::get<TaskAssignment>(outcome);
  }
  UploadOutcome upload(const TaskAssignment& task, const std::string& body) {
    UploadOutcome outcome = repo->upload(task.task_id, task.lease_token, body);
    commit();
    return outcome;
  }
  std::string rounds_closed() const {
    const std::string text = metrics.render(0, 0);
    const std::string key = "fedleaf_round_duration_seconds_count ";
    const auto at = text.find(key) + key.size();
    return text.substr(at, text.find('\n', at) - at);
  }
};

// Instances (servers) on one fresh shared store, which outlives them; none when
// FEDLEAF_TEST_PG_URL is unset (the test then returns at once).
struct SharedStore {
  PostgresBackend backend;
  FakeClock clock;
  std::vector<std::unique_ptr<Instance>> servers;
  explicit SharedStore(std::size_t n) {
    if (std::unique_ptr<Store> first = backend.open()) {
      servers.push_back(std::make_unique<Instance>(std::move(first), clock));
      while (servers.size() < n) {
        servers.push_back(std::make_unique<Instance>(backend.open(), clock));
      }
    }
  }
};

std::string result_for(int round, int i) {
  return train_result({i % 10, (i * 3 + round) % 10}, 0.1f * static_cast<float>(i + 1),
                      0.01f * static_cast<float>(i * i + round), 3 + i);
}

// Instances a and b sharing a store, and a single-server reference: population "p" (one round
// of 3 reports) on both; the shared round holds results 0 (through a) and 1 (through b), and t2
// is leased (by b, or a); the reference holds all three results.
struct TwoOfThreeReported {
  FakeClock clock;
  Instance a;
  Instance b;
  Instance reference;
  TaskAssignment t2;
  TwoOfThreeReported(std::unique_ptr<Store> first, std::unique_ptr<Store> second, bool t2_by_b)
      : a(std::move(first), clock),
        b(std::move(second), clock),
        reference(std::make_unique<SqliteStore>(":memory:"), clock) {
    const CreatedPopulation p = a.repo->create_population(test_spec("p", 1, 3, 3));
    const CreatedPopulation single = reference.repo->create_population(test_spec("p", 1, 3, 3));
    const TaskAssignment t0 = a.claim(p);
    const TaskAssignment t1 = b.claim(p);
    t2 = (t2_by_b ? b : a).claim(p);
    a.upload(t0, result_for(0, 0));
    b.upload(t1, result_for(0, 1));
    for (int i = 0; i < 3; ++i) reference.upload(reference.claim(single), result_for(0, i));
  }
};

}  // namespace

TEST_CASE("instances_sharing_a_store_publish_the_single_server_model_bit_for_bit",
          "[repository][shared]") {
  SharedStore cluster(3);
  if (cluster.servers.empty()) return;
  std::vector<std::unique_ptr<Instance>>& servers = cluster.servers;
  Instance reference(std::make_unique<SqliteStore>(":memory:"), cluster.clock);
  constexpr int kClients = 5;
  const CreatedPopulation shared =
      servers[0]->repo->create_population(test_spec("p", 2, kClients, kClients));
  const CreatedPopulation single =
      reference.repo->create_population(test_spec("p", 2, kClients, kClients));

  for (int round = 0; round < 2; ++round) {
    std::vector<TaskAssignment> tasks;
    for (int i = 0; i < kClients; ++i) {
      tasks.push_back(servers[static_cast<std::size_t>(i) % 3]->claim(shared));
    }
    for (int i = 0; i < kClients; ++i) {
      // Uploaded through another instance than the one that leased the task.
      Instance& server = *servers[static_cast<std::size_t>(i + 1) % 3];
      CHECK(server.upload(tasks[static_cast<std::size_t>(i)], result_for(round, i)).status == 201);
      CHECK(reference.upload(reference.claim(single), result_for(round, i)).status == 201);
    }
    const ModelBlob expected = reference.repo->model("p", round + 1);
    for (auto& server : servers) {
      const ModelBlob published = server->repo->model("p", round + 1);
      CHECK(published.etag == expected.etag);
      CHECK(*published.bytes == *expected.bytes);
    }
  }
  // The plan's clips are adaptive (the defaults): round 1 clipped at the bound round 0's close
  // stored with it, the same on every instance as on the single server.
  const auto history = [](Instance& server) {
    return status_json(server.repo->status("p"))["history"];
  };
  const auto expected_history = history(reference);
  CHECK(expected_history[1]["robust"]["clip_bound"] != expected_history[0]["robust"]["clip_bound"]);
  for (auto& server : servers) {
    const auto seen = history(*server);
    CHECK(seen[0]["robust"] == expected_history[0]["robust"]);
    CHECK(seen[1]["robust"] == expected_history[1]["robust"]);
  }
  int closes = 0;
  for (auto& server : servers) closes += std::stoi(server->rounds_closed());
  CHECK(closes == 2);
  CHECK(servers[2]->repo->status("p").record.state == RunState::kFinished);
}

// A server optimizer's state is stored with each model: whichever instance closes a round reads
// the state the previous close wrote, on whichever instance that ran (here each round is closed
// by another one), and the models are the single server's bit for bit.
TEST_CASE("instances_closing_rounds_in_turn_carry_the_server_optimizer_state_bit_for_bit",
          "[repository][shared][server_optimizer]") {
  SharedStore cluster(3);
  if (cluster.servers.empty()) return;
  std::vector<std::unique_ptr<Instance>>& servers = cluster.servers;
  Instance reference(std::make_unique<SqliteStore>(":memory:"), cluster.clock);
  constexpr int kClients = 4;
  constexpr int kRounds = 3;
  PopulationSpec spec = test_spec("p", kRounds, kClients, kClients);
  spec.settings.server_optimizer_json =
      R"({"type":"adam","learning_rate":0.05,"beta1":0.9,"beta2":0.99,"epsilon":0.001,)"
      R"("bias_correction":true})";
  const CreatedPopulation shared = servers[0]->repo->create_population(spec);
  const CreatedPopulation single = reference.repo->create_population(spec);

  for (int round = 0; round < kRounds; ++round) {
    std::vector<TaskAssignment> tasks;
    for (int i = 0; i < kClients; ++i) tasks.push_back(servers[0]->claim(shared));
    for (int i = 0; i < kClients; ++i) {
      // The last report of round r goes through instance r, which closes the round.
      Instance& server = *servers[static_cast<std::size_t>(i + 1 + round + 2) % 3];
      CHECK(server.upload(tasks[static_cast<std::size_t>(i)], result_for(round, i)).status == 201);
      CHECK(reference.upload(reference.claim(single), result_for(round, i)).status == 201);
    }
    CHECK(servers[static_cast<std::size_t>(round)]->rounds_closed() == "1");
    const ModelBlob expected = reference.repo->model("p", round + 1);
    for (auto& server : servers) {
      const ModelBlob published = server->repo->model("p", round + 1);
      CHECK(published.etag == expected.etag);
      CHECK(*published.bytes == *expected.bytes);
    }
  }
  CHECK(servers[1]->store->find_optimizer_state("p", kRounds)->bytes ==
        reference.store->find_optimizer_state("p", kRounds)->bytes);
}

TEST_CASE("two_instances_seeing_the_deadline_at_once_publish_one_model", "[repository][shared]") {
  SharedStore cluster(2);
  if (cluster.servers.empty()) return;
  Instance& a = *cluster.servers[0];
  Instance& b = *cluster.servers[1];
  const CreatedPopulation p = a.repo->create_population(test_spec("p", 3, 4, 1));
  a.upload(b.claim(p), result_for(0, 1));
  CHECK(b.repo->status("p").round.reports == 1);  // both have the round loaded
  cluster.clock.advance(101);                     // past the deadline, with min_reports

  std::thread ta([&] { a.repo->tick(); });
  std::thread tb([&] { b.repo->tick(); });
  ta.join();
  tb.join();

  CHECK(std::stoi(a.rounds_closed()) + std::stoi(b.rounds_closed()) == 1);
  CHECK(a.repo->model("p", 1).etag == b.repo->model("p", 1).etag);
  const PopulationStatus status = b.repo->status("p");
  CHECK(status.record.current_round == 1);
  REQUIRE(status.history.size() == 2);
  CHECK(status.history[0].record.status == RoundStatus::kClosed);
  CHECK(status.history[0].record.reports == 1);
  CHECK(status.history[1].record.status == RoundStatus::kOpen);
  // Each instance hands out tasks of the new round.
  CHECK(a.claim(p).round == 1);
  CHECK(b.claim(p).round == 1);
}

}  // namespace fedleaf::server

namespace fedleaf::server {

TEST_CASE("two_instances_seeing_quorum_at_once_publish_one_model_equal_to_one_servers",
          "[repository][shared]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  TwoOfThreeReported stored(std::move(first), backend.open(), false);
  FakeClock& clock = stored.clock;
  Instance& a = stored.a;
  Instance& b = stored.b;
  Instance& reference = stored.reference;
  const TaskAssignment& t2 = stored.t2;
  std::unique_ptr<Store> third = backend.open();  // a third server, seen by neither instance
  {  // the quorum's last report, accepted by the third server
    const std::string body = result_for(0, 2);
    AcceptRequest request;
    request.task_id = t2.task_id;
    request.lease_id = third->list_leases(t2.task_id).at(0).id;
    request.result_sha256 = sha256_hex(body);
    request.now = clock.now();
    request.train_bytes = body;
    request.delta.examples = 1;
    request.delta.upload_bytes = static_cast<std::int64_t>(body.size());
    StoreTransaction tx(*third, Durability::kNormal);
    REQUIRE(third->accept_result(request).status == AcceptStatus::kAccepted);
    tx.commit();
  }
  CHECK(std::stoi(a.rounds_closed()) + std::stoi(b.rounds_closed()) == 0);

  // Both see the quorum on their next request, at once: each tries to close the round.
  std::thread ta([&] {
    a.repo->status("p");
    a.commit();
  });
  std::thread tb([&] {
    b.repo->status("p");
    b.commit();
  });
  ta.join();
  tb.join();

  CHECK(std::stoi(a.rounds_closed()) + std::stoi(b.rounds_closed()) == 1);
  const ModelBlob expected = reference.repo->model("p", 1);
  CHECK(a.repo->model("p", 1).etag == expected.etag);
  CHECK(*b.repo->model("p", 1).bytes == *expected.bytes);
  const PopulationStatus status = a.repo->status("p");
  CHECK(status.record.current_round == 1);
  REQUIRE(status.history.size() == 2);  // round 1: the evaluation of the final model
  CHECK(status.history[0].record.status == RoundStatus::kClosed);
  CHECK(status.history[0].record.reports == 3);
}

TEST_CASE("checkpoint_all_of_an_instance_holding_only_its_own_uploads_writes_no_checkpoint",
          "[repository][shared]") {
  SharedStore cluster(2);
  if (cluster.servers.empty()) return;
  Instance& a = *cluster.servers[0];
  Instance& b = *cluster.servers[1];
  const CreatedPopulation p = a.repo->create_population(test_spec("p", 1, 4, 4));
  const TaskAssignment t0 = a.claim(p);
  const TaskAssignment t1 = b.claim(p);
  const TaskAssignment t2 = a.claim(p);
  a.upload(t0, result_for(0, 0));  // seq 1
  b.upload(t1, result_for(0, 1));  // seq 2
  a.upload(t2, result_for(0, 2));  // seq 3: a holds results 1 and 3

  a.repo->checkpoint_all();
  Instance restarted(cluster.backend.open(), cluster.clock);

  CHECK_FALSE(restarted.store->find_checkpoint("p", 0));
  CHECK(restarted.repo->status("p").round.reports == 3);  // loads: not quarantined
}

TEST_CASE("a_restarted_instance_rebuilds_a_round_other_instances_share", "[repository][shared]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  TwoOfThreeReported s(std::move(first), backend.open(), true);

  s.a.repo->checkpoint_all();  // on a shared store none: the restart replays the stored results
  Instance restarted(backend.open(), s.clock);
  restarted.upload(s.t2, result_for(0, 2));

  CHECK(restarted.repo->model("p", 1).etag == s.reference.repo->model("p", 1).etag);
  CHECK(s.a.repo->model("p", 1).etag == s.reference.repo->model("p", 1).etag);
}

}  // namespace fedleaf::server

namespace fedleaf::server {
namespace {

// A second connection to a SQLite file that calls itself shared (or not) and whose first
// `failures` reads of results fail: a population it loads is quarantined until a load
// succeeds.
class FailingResultsStore : public SqliteStore {
 public:
  FailingResultsStore(const std::string& path, bool shared, int failures)
      : SqliteStore(path), shared_(shared), failures_(failures) {}
  bool shared() const override { return shared_; }
  std::vector<ResultRecord> list_results(const std::string& population_id, int round,
                                         std::int64_t after_seq) override {
    if (failures_ > 0) {
      --failures_;
      throw Error("results unreadable (test)");
    }
    return SqliteStore::list_results(population_id, round, after_seq);
  }

 private:
  bool shared_;
  int failures_;
};

// Loads population "p" (one report accepted by another server) through a store whose reads of
// results fail more often than a load retries; then lets `wait_s` pass and asks for its status.
PopulationStatus status_after_quarantine(bool shared, double wait_s) {
  SqliteFileBackend file;
  FakeClock clock;
  Instance other(std::make_unique<SqliteStore>(file.path), clock);
  const CreatedPopulation p = other.repo->create_population(test_spec("p", 1, 3, 3));
  other.upload(other.claim(p), result_for(0, 0));
  FailingResultsStore store(file.path, shared, 5);  // as many as a shared store's load tries
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, {});
  CHECK(repo.status("p").failure_reason);
  CHECK_THROWS_AS(repo.claim("p", p.client_token), Unavailable);
  clock.advance(wait_s);
  return repo.status("p");
}

}  // namespace

TEST_CASE("a_quarantined_population_of_a_shared_store_is_loaded_again_when_the_recheck_is_due",
          "[repository][shared]") {
  const PopulationStatus status =
      status_after_quarantine(true, TaskRepository::kQuarantineRecheckS);
  CHECK_FALSE(status.failure_reason);
  CHECK(status.round.reports == 1);
}

TEST_CASE("a_quarantined_population_stays_quarantined_before_the_recheck_and_on_an_owned_store",
          "[repository][shared]") {
  CHECK(status_after_quarantine(true, TaskRepository::kQuarantineRecheckS / 2).failure_reason);
  CHECK(status_after_quarantine(false, 10 * TaskRepository::kQuarantineRecheckS).failure_reason);
}

}  // namespace fedleaf::server

namespace fedleaf::server {
namespace {

// A SQLite file that calls itself shared and whose claim_task finds nothing while `busy`, as a
// PostgreSQL claim does when another server holds the round row past the lock wait limit.
class BusyClaimStore : public SqliteStore {
 public:
  explicit BusyClaimStore(const std::string& path) : SqliteStore(path) {}
  bool shared() const override { return true; }
  std::optional<ClaimedTask> claim_task(const ClaimRequest& request) override {
    if (busy) return std::nullopt;
    return SqliteStore::claim_task(request);
  }
  bool busy = true;
};

}  // namespace

TEST_CASE("a_claim_parked_while_its_task_could_not_be_taken_is_woken_by_the_next_tick",
          "[repository][shared]") {
  SqliteFileBackend file;
  FakeClock clock;
  BusyClaimStore store(file.path);
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, {});
  const CreatedPopulation p = repo.create_population(test_spec("p", 1, 3, 3));
  ClaimOutcome first = repo.claim(p.id, p.client_token);
  repo.commit_batch();
  REQUIRE(std::holds_alternative<RetryLater>(first));
  int woken = 0;
  repo.waiters().park(p.id, std::get<RetryLater>(first).wake_epoch, [&] { ++woken; });
  store.busy = false;  // the other server's lock is gone

  repo.tick();  // nothing moved: only the tick can tell the parked claim a task is there

  CHECK(woken == 1);
  ClaimOutcome again = repo.claim(p.id, p.client_token);
  repo.commit_batch();
  CHECK(std::holds_alternative<TaskAssignment>(again));
}

}  // namespace fedleaf::server

namespace fedleaf::server {

// An instance claims and accepts train reports in the round it has loaded without re-reading it
// first: when another instance closed that round meanwhile, its report of the closed round is
// refused (410, counted nowhere) and its claim leases a task of the next round.
TEST_CASE("an_instance_whose_loaded_round_another_closed_refuses_its_reports_and_claims_the_next",
          "[repository][shared]") {
  SharedStore cluster(2);
  if (cluster.servers.empty()) return;
  Instance& a = *cluster.servers[0];
  Instance& b = *cluster.servers[1];
  PopulationSpec spec = test_spec("p", 3, 2, 2);
  spec.settings.train_tasks_per_round = 3;
  const CreatedPopulation p = a.repo->create_population(spec);
  const TaskAssignment late = a.claim(p);  // a's loaded round 0: open, no report yet
  b.upload(b.claim(p), result_for(0, 0));
  b.upload(b.claim(p), result_for(0, 1));  // the second report closes round 0
  REQUIRE(b.repo->status("p").record.current_round == 1);

  CHECK_THROWS_AS(a.repo->upload(late.task_id, late.lease_token, result_for(0, 2)), Gone);
  a.commit();
  CHECK(a.claim(p).round == 1);
  const PopulationStatus status = b.repo->status("p");
  REQUIRE(status.history.size() == 2);
  CHECK(status.history[0].record.reports == 2);
  CHECK(status.history[1].record.reports == 0);
  CHECK(status.rejections.at("round_closed") == 1);
}

}  // namespace fedleaf::server
