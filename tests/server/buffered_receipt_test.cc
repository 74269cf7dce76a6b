// A buffered population's upload receipt names both rounds: `round`, the task's (the version the
// leaf trained on, as before), and `folded_into_round`, the version the report was folded into —
// later than `round` for a stale report. A synchronous receipt folds into its task's round. Every
// backend: the receipt is stored with the task and a repeat is answered from the store.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "core/aggregation/round/buffered_spec.h"
#include "server/api/wire_json.h"
#include "server/repository/task_repository.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

// K = 2, concurrency 3; 3 versions.
PopulationSpec buffered_spec(const std::string& id) {
  PopulationSpec spec = test::test_spec(id, 3, 2, 2);
  core::BufferedSpec b;
  b.buffer_size = 2;
  b.concurrency = 3;
  spec.settings.buffered_json = core::buffered_spec_json(b);
  spec.settings.train_tasks_per_round = 3;
  return spec;
}

TaskAssignment claim(TaskRepository& repo, const CreatedPopulation& p) {
  return std::get<TaskAssignment>(repo.claim(p.id, p.client_token));
}

nlohmann::json upload(TaskRepository& repo, const TaskAssignment& t, int expected_status) {
  const UploadOutcome out =
      repo.upload(t.task_id, t.lease_token, test::train_result({1}, 0.1f, 0.1f, 3));
  CHECK(out.status == expected_status);
  repo.commit_batch();  // as the server does before it answers (PostgreSQL batches the close)
  return nlohmann::json::parse(receipt_json(out.receipt));
}

}  // namespace

FEDLEAF_STORE_CASE(a_stale_reports_receipt_names_its_tasks_round_and_the_version_it_folded_into,
                   FEDLEAF_STORE_BACKENDS) {
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
  const CreatedPopulation p = repo.create_population(buffered_spec("p"));
  const TaskAssignment a = claim(repo, p), b = claim(repo, p), stale = claim(repo, p);
  const nlohmann::json first = upload(repo, a, 201);
  CHECK(first["round"] == 0);
  CHECK(first["folded_into_round"] == 0);
  upload(repo, b, 201);  // version 1 published

  const nlohmann::json receipt = upload(repo, stale, 201);
  CHECK(receipt["round"] == 0);                // the version it trained on
  CHECK(receipt["folded_into_round"] == 1);    // the buffer it went into
  CHECK(receipt["reports"] == 1);              // version 1's reports, counting it
  CHECK(upload(repo, stale, 200) == receipt);  // a repeat: the same receipt
}

FEDLEAF_STORE_CASE(a_synchronous_receipt_folds_into_its_tasks_round, FEDLEAF_STORE_BACKENDS) {
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
  const CreatedPopulation p = repo.create_population(test::test_spec("s", 2, 1, 1));
  upload(repo, claim(repo, p), 201);
  const nlohmann::json receipt = upload(repo, claim(repo, p), 201);
  CHECK(receipt["round"] == 1);
  CHECK(receipt["folded_into_round"] == 1);
}

TEST_CASE("a_buffered_min_contributors_above_buffer_size_is_refused_naming_buffer_size",
          "[repository][buffered]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
  PopulationSpec spec = buffered_spec("p");
  nlohmann::json plan = nlohmann::json::parse(spec.plan_json);
  plan["updates"]["emb/weight"]["min_contributors"] = 3;
  spec.plan_json = plan.dump();
  CHECK_THROWS_WITH(repo.create_population(spec),
                    Catch::Contains("min_contributors 3 is more than buffer_size 2") &&
                        Catch::Contains("no version could change a row"));
}

}  // namespace fedleaf::server
