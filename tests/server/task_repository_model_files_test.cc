// TaskRepository on a SQLite file store, whose models are files: a round's model survives a
// restart byte for byte; a damaged or missing model file quarantines its population only.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "server/api/wire_json.h"
#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "server/util/server_errors.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

using test::test_spec;
using test::train_result;

struct Created {
  CreatedPopulation good;
  CreatedPopulation other;
  std::string round1_model;
};

// Two populations; "good" closes round 0 (its model 1 is a file), "other" stays at round 0.
Created create_and_close(const std::string& db) {
  SqliteStore store(db);
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, {});
  Created out;
  out.good = repo.create_population(test_spec("good", 3, 1, 1));
  out.other = repo.create_population(test_spec("other", 3, 1, 1));
  auto task = std::get<TaskAssignment>(repo.claim("good", out.good.client_token));
  repo.upload(task.task_id, task.lease_token, train_result({1, 2}, 0.5f, 0.25f, 3));
  repo.commit_batch();
  store.sync();
  out.round1_model = *repo.model("good", 1).bytes;
  return out;
}

}  // namespace

TEST_CASE("a_committed_rounds_model_file_is_served_byte_for_byte_after_a_restart", "[repository]") {
  SqliteFileBackend backend;
  const Created created = create_and_close(backend.path);

  SqliteStore store(backend.path);
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository restarted(store, clock, metrics, {});

  const ModelBlob model = restarted.model("good", 1);
  CHECK(*model.bytes == created.round1_model);
  CHECK(std::filesystem::exists(backend.path + "-models/" + model.etag + ".safetensors"));
  CHECK(*restarted.model("good", 0).bytes == *restarted.model("other", 0).bytes);
}

TEST_CASE("a_damaged_or_missing_model_file_quarantines_its_population_while_the_others_serve",
          "[repository]") {
  SqliteFileBackend backend;
  const Created created = create_and_close(backend.path);
  std::string model1_etag;
  {
    SqliteStore store(backend.path);
    model1_etag = store.find_model("good", 1)->etag;
  }
  const std::string file = backend.path + "-models/" + model1_etag + ".safetensors";
  const bool missing = GENERATE(false, true);
  if (missing) {
    std::filesystem::remove(file);
  } else {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << created.round1_model.substr(1);
  }

  SqliteStore store(backend.path);
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository restarted(store, clock, metrics, {});

  CHECK_THROWS_AS(restarted.claim("good", created.good.client_token), Unavailable);
  const auto status = status_json(restarted.status("good"));
  CHECK(status["state"] == "failed");
  CHECK(status["failure_reason"].get<std::string>().find(missing ? "cannot open" : "ETag") !=
        std::string::npos);
  CHECK(
      std::holds_alternative<TaskAssignment>(restarted.claim("other", created.other.client_token)));
}

// Regression: an earlier round's model file that was missing, a directory or a FIFO answered
// 500 naming the server's path (or, a FIFO, hung every request behind the repository's lock).
TEST_CASE("an_earlier_rounds_unreadable_model_file_is_503_naming_no_server_path", "[repository]") {
  SqliteFileBackend backend;
  create_and_close(backend.path);
  std::string model0_etag;
  {
    SqliteStore store(backend.path);
    model0_etag = store.find_model("good", 0)->etag;
  }
  // Round 0's file is shared with "other"'s current model: damage it after the restart's load.
  SqliteStore store(backend.path);
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository restarted(store, clock, metrics, {});
  const std::string file = backend.path + "-models/" + model0_etag + ".safetensors";
  std::filesystem::remove(file);
  const int kind = GENERATE(0, 1, 2);
  if (kind == 1) std::filesystem::create_directory(file);
  if (kind == 2) REQUIRE(::mkfifo(file.c_str(), 0600) == 0);

  try {
    restarted.model("good", 0);
    FAIL("no error");
  } catch (const Unavailable& e) {
    const std::string message = e.what();
    CHECK(message.find("population 'good': the stored model of round 0 cannot be read") == 0);
    CHECK(message.find(model0_etag + ".safetensors") != std::string::npos);
    CHECK(message.find(backend.path) == std::string::npos);
  }
  CHECK(restarted.model("good", 1).bytes);
}

}  // namespace fedleaf::server
