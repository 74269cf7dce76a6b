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

std::string result_for(int round, int i) {
  return train_result({i % 10, (i * 3 + round) % 10}, 0.1f * static_cast<float>(i + 1),
                      0.01f * static_cast<float>(i * i + round), 3 + i);
}

}  // namespace

TEST_CASE("instances_sharing_a_store_publish_the_single_server_model_bit_for_bit",
          "[repository][shared]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  FakeClock clock;
  std::vector<std::unique_ptr<Instance>> servers;
  servers.push_back(std::make_unique<Instance>(std::move(first), clock));
  servers.push_back(std::make_unique<Instance>(backend.open(), clock));
  servers.push_back(std::make_unique<Instance>(backend.open(), clock));
  Instance reference(std::make_unique<SqliteStore>(":memory:"), clock);
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

TEST_CASE("two_instances_seeing_the_deadline_at_once_publish_one_model", "[repository][shared]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  FakeClock clock;
  Instance a(std::move(first), clock);
  Instance b(backend.open(), clock);
  const CreatedPopulation p = a.repo->create_population(test_spec("p", 3, 4, 1));
  a.upload(b.claim(p), result_for(0, 1));
  CHECK(b.repo->status("p").round.reports == 1);  // both have the round loaded
  clock.advance(101);                             // past the deadline, with min_reports

  std::thread ta([&] { a.repo->tick(); });
  std::thread tb([&] { b.repo->tick(); });
  ta.join();
  tb.join();

  CHECK(std::stoi(a.rounds_closed()) + std::stoi(b.rounds_closed()) == 1);
  CHECK(a.repo->model("p", 1).etag == b.repo->model("p", 1).etag);
  const PopulationStatus status = b.repo->status("p");
  CHECK(status.record.current_round == 1);
  REQUIRE(status.history.size() == 2);
  CHECK(status.history[0].status == RoundStatus::kClosed);
  CHECK(status.history[0].reports == 1);
  CHECK(status.history[1].status == RoundStatus::kOpen);
  // Each instance hands out tasks of the new round.
  CHECK(a.claim(p).round == 1);
  CHECK(b.claim(p).round == 1);
}

}  // namespace fedleaf::server

namespace fedleaf::server {

TEST_CASE("checkpoint_all_of_an_instance_holding_only_its_own_uploads_writes_no_checkpoint",
          "[repository][shared]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  FakeClock clock;
  Instance a(std::move(first), clock);
  Instance b(backend.open(), clock);
  const CreatedPopulation p = a.repo->create_population(test_spec("p", 1, 4, 4));
  const TaskAssignment t0 = a.claim(p);
  const TaskAssignment t1 = b.claim(p);
  const TaskAssignment t2 = a.claim(p);
  a.upload(t0, result_for(0, 0));  // seq 1
  b.upload(t1, result_for(0, 1));  // seq 2
  a.upload(t2, result_for(0, 2));  // seq 3: a holds results 1 and 3

  a.repo->checkpoint_all();
  Instance restarted(backend.open(), clock);

  CHECK_FALSE(restarted.store->find_checkpoint("p", 0));
  CHECK(restarted.repo->status("p").round.reports == 3);  // loads: not quarantined
}

TEST_CASE("a_restarted_instance_rebuilds_a_round_other_instances_share", "[repository][shared]") {
  PostgresBackend backend;
  auto first = backend.open();
  if (!first) return;
  FakeClock clock;
  Instance a(std::move(first), clock);
  Instance b(backend.open(), clock);
  Instance reference(std::make_unique<SqliteStore>(":memory:"), clock);
  const CreatedPopulation p = a.repo->create_population(test_spec("p", 1, 3, 3));
  const CreatedPopulation single = reference.repo->create_population(test_spec("p", 1, 3, 3));
  const TaskAssignment t0 = a.claim(p);
  const TaskAssignment t1 = b.claim(p);
  const TaskAssignment t2 = b.claim(p);
  a.upload(t0, result_for(0, 0));
  b.upload(t1, result_for(0, 1));
  for (int i = 0; i < 3; ++i) reference.upload(reference.claim(single), result_for(0, i));

  a.repo->checkpoint_all();  // holds seq 1 only, in order: a checkpoint of result 1
  Instance restarted(backend.open(), clock);
  restarted.upload(t2, result_for(0, 2));

  CHECK(restarted.repo->model("p", 1).etag == reference.repo->model("p", 1).etag);
  CHECK(a.repo->model("p", 1).etag == reference.repo->model("p", 1).etag);
}

}  // namespace fedleaf::server
