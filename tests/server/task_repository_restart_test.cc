// TaskRepository with a fake clock: what reaches the store and when (commit batches, checkpoints),
// and what a restart resumes from it.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "server/api/wire_json.h"
#include "server/repository/population_state.h"
#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "server/util/server_errors.h"
#include "server/util/sha256.h"
#include "tests/core/error_matchers.h"
#include "tests/core/raw_safetensors.h"
#include "tests/server/repository_harness.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

using Harness = RepositoryHarness;
using test::MessageContains;
using test::test_spec;
using test::train_result;

}  // namespace

TEST_CASE("a_restarted_repository_resumes_the_open_round_exactly", "[repository]") {
  const std::vector<test::TrainUpload> uploads = {
      {{1}, 0.5f, 0.25f, 3}, {{1, 2}, -1.0f, 1.0f, 1}, {{9}, 2.0f, -0.5f, 2}};
  for (int checkpoint_every : {0, 1, 2}) {
    SqliteStore store(":memory:");
    FakeClock clock;
    ServerMetrics metrics;
    TaskRepositoryOptions options;
    options.checkpoint_every = checkpoint_every;
    CreatedPopulation p;
    TaskAssignment last;
    {
      TaskRepository repo(store, clock, metrics, options);
      p = repo.create_population(test_spec("p", 2, 3, 3));
      for (std::size_t i = 0; i < 2; ++i) {
        auto task = std::get<TaskAssignment>(repo.claim("p", p.client_token));
        const auto& u = uploads[i];
        repo.upload(task.task_id, task.lease_token,
                    train_result(u.rows, u.row_value, u.dense_value, u.num_examples));
      }
      last = std::get<TaskAssignment>(repo.claim("p", p.client_token));
    }

    TaskRepository restarted(store, clock, metrics, options);
    const auto& u = uploads[2];
    restarted.upload(last.task_id, last.lease_token,
                     train_result(u.rows, u.row_value, u.dense_value, u.num_examples));

    INFO("checkpoint_every " << checkpoint_every);
    CHECK(status_json(restarted.status("p"))["round"] == 1);
    CHECK(status_json(restarted.status("p"))["history"][0]["reports"] == 3);
    CHECK(test::models_close(test::decode_dense(*restarted.model("p", 1).bytes),
                             test::reference_next_model(uploads)));
  }
}

TEST_CASE("claims_uploads_and_round_closes_reach_the_store_with_commit_batch", "[repository]") {
  const SqliteFileBackend backend;  // removes the database, its WAL and its model files
  const std::string& path = backend.path;
  {
    SqliteStore store(path);
    SqliteStore observer(path);  // a second connection sees only committed state
    FakeClock clock;
    ServerMetrics metrics;
    TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
    const CreatedPopulation p = repo.create_population(test_spec("p", 2, 2, 2));
    const bool population_committed = observer.find_population("p").has_value();
    auto first = std::get<TaskAssignment>(repo.claim("p", p.client_token));
    repo.upload(first.task_id, first.lease_token, train_result({1}, 1, 1, 1));
    const int reports_before_commit = observer.find_round("p", 0)->reports;
    const bool task_before_commit = observer.find_task(first.task_id).has_value();

    repo.commit_batch();
    const int reports_after_commit = observer.find_round("p", 0)->reports;
    auto second = std::get<TaskAssignment>(repo.claim("p", p.client_token));
    repo.upload(second.task_id, second.lease_token, train_result({2}, 1, 1, 1));
    const bool round_closed_before_commit = observer.find_model("p", 1).has_value();
    repo.commit_batch();

    CHECK(population_committed);
    CHECK(reports_before_commit == 0);
    CHECK_FALSE(task_before_commit);
    CHECK(reports_after_commit == 1);
    CHECK_FALSE(round_closed_before_commit);
    CHECK(observer.find_model("p", 1));
    CHECK(observer.find_round("p", 0)->reports == 2);
  }
}

TEST_CASE("tick_commits_the_round_close_it_made", "[repository]") {
  const SqliteFileBackend backend;  // removes the database, its WAL and its model files
  const std::string& path = backend.path;
  {
    SqliteStore store(path);
    SqliteStore observer(path);
    FakeClock clock;
    ServerMetrics metrics;
    TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
    const CreatedPopulation p = repo.create_population(test_spec("p", 2, 3, 1));
    auto task = std::get<TaskAssignment>(repo.claim("p", p.client_token));
    repo.upload(task.task_id, task.lease_token, train_result({1}, 1, 1, 1));
    repo.commit_batch();
    clock.advance(101);

    repo.tick();

    CHECK(observer.find_model("p", 1));
    CHECK(observer.find_round("p", 0)->status == RoundStatus::kClosed);
  }
}

TEST_CASE("a_repository_commits_its_open_batch_when_destroyed", "[repository]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  std::int64_t task_id = 0;
  {
    TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
    auto p = repo.create_population(test_spec("p", 1, 2, 2));
    task_id = std::get<TaskAssignment>(repo.claim("p", p.client_token)).task_id;
  }

  store.begin(Durability::kNormal);  // throws if the repository left its transaction open
  store.rollback();
  CHECK(store.find_task(task_id));
}

TEST_CASE("checkpoint_all_lets_a_restart_skip_replaying_results", "[repository]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepositoryOptions options;
  options.checkpoint_every = 0;
  {
    TaskRepository repo(store, clock, metrics, options);
    auto p = repo.create_population(test_spec("p", 1, 2, 2));
    auto task = std::get<TaskAssignment>(repo.claim("p", p.client_token));
    repo.upload(task.task_id, task.lease_token, train_result({1}, 1, 1, 1));

    repo.checkpoint_all();
  }

  auto checkpoint = store.find_checkpoint("p", 0);
  REQUIRE(checkpoint);
  CHECK(checkpoint->seq == 1);
  TaskRepository restarted(store, clock, metrics, options);
  CHECK(status_json(restarted.status("p"))["reports"] == 1);
}

TEST_CASE("a_population_that_cannot_load_is_quarantined_while_the_others_serve", "[repository]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  CreatedPopulation good;
  {
    TaskRepository repo(store, clock, metrics, {});
    good = repo.create_population(test_spec("good", 3, 1, 1));
    repo.create_population(test_spec("bad", 3, 1, 1));
  }
  // A database an older server wrote: "bad"'s current round holds a model with +Infinity.
  core::NamedTensors poisoned = test::test_model_tensors();
  std::get<core::DenseTensor>(poisoned.at("out/weight")).data<float>()[0] =
      std::numeric_limits<float>::infinity();
  store.begin(Durability::kFull);
  RoundCloseWrite close;
  close.closed = *store.lock_open_round("bad", 0);
  close.closed.status = RoundStatus::kClosed;
  close.population = *store.find_population("bad");
  close.population.current_round = 1;
  close.opened = close.closed;
  close.opened->number = 1;
  close.opened->status = RoundStatus::kOpen;
  const std::string poisoned_bytes = test::to_string(core::write_safetensors(poisoned));
  close.model = ModelRecord{"bad", 1, sha256_hex(poisoned_bytes), poisoned_bytes};
  store.close_round(close);
  store.commit();

  TaskRepository restarted(store, clock, metrics, {});

  CHECK(std::holds_alternative<TaskAssignment>(restarted.claim("good", good.client_token)));
  CHECK_THROWS_MATCHES(restarted.claim("bad", "any token"), Unavailable,
                       MessageContains("quarantined"));
  CHECK_THROWS_AS(restarted.model("bad", 1), Unavailable);
  const auto status = status_json(restarted.status("bad"));
  CHECK(status["state"] == "failed");
  CHECK(status["failure_reason"].get<std::string>().find("not finite") != std::string::npos);
  const auto list = restarted.list_populations();
  CHECK(list[0].id == "bad");
  CHECK(list[0].state == "failed");
  CHECK(list[1].state == "running");
}

TEST_CASE("a_restarted_repository_clips_the_open_round_at_the_adaptive_bound_it_stored",
          "[repository]") {
  // Round 0 clips everything at the initial bound, so round 1's bound differs from the plan's;
  // its claims {2, 3, 4} set round 1's example cap to 6, below round 1's claims {7, 8, 9}.
  const auto upload_of = [](int round, int i) {
    return train_result({i, i + 3}, 0.02f * static_cast<float>(i + 1 + round),
                        0.05f * static_cast<float>(i + 1), 2 + i + 5 * round);
  };
  std::string expected;
  {  // One repository, no restart.
    Harness h;
    const CreatedPopulation p = h.repo.create_population(test_spec("p", 2, 3, 3));
    for (int round = 0; round < 2; ++round) {
      for (int i = 0; i < 3; ++i) h.upload(h.claim_task(p), upload_of(round, i));
    }
    expected = model_of(h.repo, "p", 2);
    const auto history = h.status(p)["history"];
    CHECK(history[1]["robust"]["clip_bound"] == history[0]["robust"]["next_clip_bound"]);
    CHECK(history[1]["robust"]["clip_bound"] != history[0]["robust"]["clip_bound"]);
    CHECK(history[1]["robust"]["example_cap"] == 6);
    CHECK(history[1]["robust"]["capped"] == 3);
  }
  for (int checkpoint_every : {0, 1}) {
    INFO("checkpoint_every " << checkpoint_every);
    SqliteStore store(":memory:");
    FakeClock clock;
    ServerMetrics metrics;
    TaskRepositoryOptions options;
    options.checkpoint_every = checkpoint_every;
    TaskAssignment last;
    {
      TaskRepository repo(store, clock, metrics, options);
      const CreatedPopulation p = repo.create_population(test_spec("p", 2, 3, 3));
      for (int i = 0; i < 3; ++i) {
        auto task = std::get<TaskAssignment>(repo.claim("p", p.client_token));
        repo.upload(task.task_id, task.lease_token, upload_of(0, i));
      }
      for (int i = 0; i < 2; ++i) {
        auto task = std::get<TaskAssignment>(repo.claim("p", p.client_token));
        repo.upload(task.task_id, task.lease_token, upload_of(1, i));
      }
      last = std::get<TaskAssignment>(repo.claim("p", p.client_token));
    }
    TaskRepository restarted(store, clock, metrics, options);
    restarted.upload(last.task_id, last.lease_token, upload_of(1, 2));
    CHECK(model_of(restarted, "p", 2) == expected);
  }
}

}  // namespace fedleaf::server
