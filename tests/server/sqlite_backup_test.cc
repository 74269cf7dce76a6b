// backup_sqlite_database: the copy is one snapshot of a database a live repository keeps
// writing, with exactly the model files that snapshot names (even one the live server deletes
// meanwhile); a failure names its path and leaves nothing behind.
#include "server/store/sqlite_backup.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

namespace fs = std::filesystem;
using test::test_spec;
using test::train_result;

struct TempDirectory {
  std::string path =
      (fs::temp_directory_path() / ("fedleaf_backup_" + std::to_string(::getpid()) + "_" +
                                    std::to_string(reinterpret_cast<std::uintptr_t>(this))))
          .string();
  TempDirectory() { fs::create_directories(path); }
  ~TempDirectory() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

void close_current_round(TaskRepository& repo, Store& store, const CreatedPopulation& created) {
  auto task = std::get<TaskAssignment>(repo.claim(created.id, created.client_token));
  repo.upload(task.task_id, task.lease_token, train_result({1, 2}, 0.5f, 0.25f, 3));
  repo.commit_batch();
  store.sync();
}

// How many entries `dir` holds (a failed backup leaves none).
std::size_t entries(const std::string& dir) {
  return static_cast<std::size_t>(
      std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("backup_copies_one_snapshot_and_the_model_files_it_names_while_the_server_writes",
          "[backup]") {
  SqliteFileBackend backend;
  TempDirectory out;
  SqliteStore store(backend.path);
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepositoryOptions options;
  options.keep_models = 1;
  TaskRepository repo(store, clock, metrics, options);
  const CreatedPopulation created = repo.create_population(test_spec("p", 4, 1, 1));
  close_current_round(repo, store, created);
  const ModelBlob model1 = repo.model("p", 1);
  const std::string live_file1 = backend.path + "-models/" + model1.etag + ".safetensors";

  // Between two steps of the copy the live repository closes round 1: with keep_models 1 it
  // drops model 1 and deletes its file, which the snapshot being copied still names.
  SqliteBackupOptions backup;
  backup.pages_per_step = 1;
  int steps = 0;
  backup.progress = [&](const SqliteBackupProgress& p) {
    if (p.stage != SqliteBackupProgress::Stage::kDatabase || steps++ != 0) return;
    close_current_round(repo, store, created);
  };
  const SqliteBackupResult done = backup_sqlite_database(backend.path, out.path + "/b", backup);

  REQUIRE(steps > 1);
  REQUIRE(repo.status("p").round.number == 2);
  REQUIRE_FALSE(fs::exists(live_file1));
  CHECK(done.database == out.path + "/b/" + fs::path(backend.path).filename().string());
  CHECK(done.model_directory == done.database + "-models");
  CHECK(done.model_files == entries(done.model_directory));
  CHECK(done.pages > 1);
  CHECK(entries(out.path) == 1);  // no staging directory left beside it

  SqliteStore restored(done.database);
  CHECK(restored.model_files_at_open().set_aside.empty());
  CHECK(restored.model_files_at_open().named == done.model_files);
  FakeClock restored_clock;
  ServerMetrics restored_metrics;
  TaskRepository restarted(restored, restored_clock, restored_metrics, options);
  CHECK(restarted.status("p").round.number == 1);
  CHECK(*restarted.model("p", 1).bytes == *model1.bytes);
  // The population goes on from the backup: round 1 closes there too.
  close_current_round(restarted, restored, created);
  CHECK(restarted.status("p").round.number == 2);
}

TEST_CASE("backup_into_an_existing_empty_directory_is_accepted", "[backup]") {
  SqliteFileBackend backend;
  TempDirectory out;
  {
    SqliteStore store(backend.path);
    FakeClock clock;
    ServerMetrics metrics;
    TaskRepository repo(store, clock, metrics, {});
    repo.create_population(test_spec("p", 2, 1, 1));
  }
  fs::create_directory(out.path + "/empty");

  const SqliteBackupResult done = backup_sqlite_database(backend.path, out.path + "/empty/");

  CHECK(done.model_files == 1);
  CHECK(fs::exists(out.path + "/empty/" + fs::path(backend.path).filename().string()));
}

TEST_CASE("backup_failures_name_the_path_and_write_nothing", "[backup]") {
  SqliteFileBackend backend;
  TempDirectory out;
  std::string model0_file;
  {
    SqliteStore store(backend.path);
    FakeClock clock;
    ServerMetrics metrics;
    TaskRepository repo(store, clock, metrics, {});
    const CreatedPopulation created = repo.create_population(test_spec("p", 2, 1, 1));
    model0_file = backend.path + "-models/" + created.model_etag + ".safetensors";
  }
  const std::string to = out.path + "/b";

  SECTION("no database") {
    CHECK_THROWS_WITH(backup_sqlite_database(out.path + "/absent.db", to),
                      Catch::Contains(out.path + "/absent.db") && Catch::Contains("No such file"));
  }
  SECTION("not a database") {
    std::ofstream(out.path + "/text.db") << std::string(8192, 'x');
    CHECK_THROWS_WITH(backup_sqlite_database(out.path + "/text.db", to),
                      Catch::Contains(out.path + "/text.db") && Catch::Contains("not a database"));
    fs::remove(out.path + "/text.db");
  }
  SECTION("destination not empty") {
    fs::create_directories(to + "/old");
    CHECK_THROWS_WITH(backup_sqlite_database(backend.path, to),
                      Catch::Contains("'" + to + "' exists and is not an empty directory"));
    fs::remove_all(to);
  }
  SECTION("destination's parent missing") {
    CHECK_THROWS_WITH(backup_sqlite_database(backend.path, out.path + "/no/b"),
                      Catch::Contains("'" + out.path + "/no' (where"));
  }
  SECTION("a model file the database names is missing") {
    fs::remove(model0_file);
    CHECK_THROWS_WITH(backup_sqlite_database(backend.path, to),
                      Catch::Contains("'" + model0_file + "', which does not exist"));
  }
  CHECK(entries(out.path) == 0);
}

}  // namespace fedleaf::server
