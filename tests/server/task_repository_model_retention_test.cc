// TaskRepository with a model retention policy (TaskRepositoryOptions::keep_models) on a SQLite
// file store: a close drops the models older than the last keep_models, except a round's model
// a task still holds a valid lease of; a dropped model is 410 and its file is deleted once the
// drop is durable.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "server/util/server_errors.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

using test::test_spec;
using test::train_result;

// Claims and uploads the one report that closes the population's current round.
void close_current_round(TaskRepository& repo, Store& store, const CreatedPopulation& created) {
  auto task = std::get<TaskAssignment>(repo.claim(created.id, created.client_token));
  repo.upload(task.task_id, task.lease_token, train_result({1, 2}, 0.5f, 0.25f, 3));
  repo.commit_batch();
  store.sync();
}

}  // namespace

TEST_CASE("keep_models_drops_older_models_and_their_files_but_not_one_a_valid_lease_may_read",
          "[repository]") {
  SqliteFileBackend backend;
  SqliteStore store(backend.path);
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepositoryOptions options;
  options.keep_models = 2;
  TaskRepository repo(store, clock, metrics, options);
  PopulationSpec spec = test_spec("p", 4, 1, 1);
  spec.settings.train_tasks_per_round = 2;
  const CreatedPopulation created = repo.create_population(spec);
  const auto file_of = [&](int round) {
    return backend.path + "-models/" + repo.model("p", round).etag + ".safetensors";
  };
  const std::string model0_file = file_of(0);

  // Round 0: a second train task stays leased (lease_s 10) past the close.
  const auto held = std::get<TaskAssignment>(repo.claim("p", created.client_token));
  close_current_round(repo, store, created);
  close_current_round(repo, store, created);
  // Round 2 is current; model 0 is past the last two but its round's lease still holds.
  REQUIRE(repo.status("p").round.number == 2);
  CHECK(std::filesystem::exists(model0_file));
  CHECK(repo.model("p", 0).etag == created.model_etag);
  const std::string model1_file = file_of(1);

  clock.set(held.lease_expires_at + 1);
  close_current_round(repo, store, created);
  REQUIRE(repo.status("p").round.number == 3);
  CHECK_THROWS_AS(repo.model("p", 0), Gone);
  CHECK_THROWS_AS(repo.model("p", 1), Gone);
  CHECK_FALSE(std::filesystem::exists(model0_file));
  CHECK_FALSE(std::filesystem::exists(model1_file));
  CHECK(std::filesystem::exists(file_of(2)));
  CHECK(std::filesystem::exists(file_of(3)));

  // After a restart the kept models are served, the dropped ones stay gone.
  SqliteStore reopened(backend.path);
  TaskRepository restarted(reopened, clock, metrics, options);
  CHECK(restarted.model("p", 2).etag == repo.model("p", 2).etag);
  CHECK(restarted.model("p", 3).etag == repo.model("p", 3).etag);
  CHECK_THROWS_AS(restarted.model("p", 1), Gone);
}

TEST_CASE("keep_models_0_keeps_every_model", "[repository]") {
  SqliteFileBackend backend;
  SqliteStore store(backend.path);
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, {});
  const CreatedPopulation created = repo.create_population(test_spec("p", 3, 1, 1));
  for (int round = 0; round < 3; ++round) close_current_round(repo, store, created);
  for (int round = 0; round <= 3; ++round) {
    CHECK(std::filesystem::exists(backend.path + "-models/" + repo.model("p", round).etag +
                                  ".safetensors"));
  }
}

}  // namespace fedleaf::server
