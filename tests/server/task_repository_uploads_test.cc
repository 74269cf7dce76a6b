// TaskRepository with a fake clock: uploads sent again, refused, unauthorized or invalid.
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

// Its answer lost (a server killed, a connection dropped), the leaf sends the same upload again
// and is refused again: one refusal, counted once in the status and the metrics.
TEST_CASE("a_refused_upload_sent_again_is_counted_once", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 1, 1));
  const TaskAssignment task = h.claim_task(p);
  const std::string body = train_result({1}, 1, 1, 1);
  h.clock.advance(10.5);

  CHECK_THROWS_AS(h.upload(task, body), Gone);
  CHECK_THROWS_AS(h.upload(task, body), Gone);

  CHECK(h.status(p)["rejections"]["lease_expired"] == 1);
  CHECK_THAT(h.metrics.render(0, 0),
             Catch::Contains("fedleaf_upload_rejections_total{reason=\"lease_expired\"} 1\n"));
}

TEST_CASE("reupload_of_identical_bytes_returns_200_with_first_answer", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 2, 2));
  const TaskAssignment task = h.claim_task(p);
  const std::string body = train_result({1, 2}, 0.5f, 0.25f, 3);

  const UploadOutcome first = h.upload(task, body);
  const UploadOutcome again = h.upload(task, body);

  CHECK(first.status == 201);
  CHECK(again.status == 200);
  CHECK(receipt_json(again.receipt) == receipt_json(first.receipt));
  CHECK(h.status(p)["reports"] == 1);
}

TEST_CASE("different_bytes_for_a_finished_task_get_409", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 2, 2));
  const TaskAssignment task = h.claim_task(p);
  h.upload(task, train_result({1}, 0.5f, 0.25f, 3));

  CHECK_THROWS_AS(h.upload(task, train_result({1}, 0.5f, 0.75f, 3)), Conflict);
  CHECK(h.status(p)["reports"] == 1);
  CHECK(h.status(p)["rejections"]["conflict"] == 1);
}

TEST_CASE("upload_for_a_task_of_a_closed_round_gets_410", "[repository]") {
  Harness h;
  auto spec = test_spec("p", 3, 1, 1);
  spec.settings.train_tasks_per_round = 2;  // over-selection: two leases for one report
  auto p = h.repo.create_population(spec);
  const TaskAssignment a = h.claim_task(p);
  const TaskAssignment b = h.claim_task(p);
  h.upload(a, train_result({1}, 1, 1, 1));  // round 0 closes

  CHECK(h.status(p)["round"] == 1);
  CHECK_THROWS_MATCHES(h.upload(b, train_result({2}, 1, 1, 1)), Gone,
                       MessageContains("round 0 of population 'p' is closed"));
  CHECK(h.status(p)["rejections"]["round_closed"] == 1);
  CHECK(h.claim_task(p).round == 1);
}

TEST_CASE("wrong_client_token_is_forbidden", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 1, 1));

  CHECK_THROWS_AS(h.repo.claim("p", "not-the-token"), Forbidden);
  CHECK_THROWS_AS(h.repo.claim("nobody", p.client_token), NotFound);
}

TEST_CASE("wrong_lease_token_is_forbidden_and_unknown_task_not_found", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 1, 1));
  const TaskAssignment task = h.claim_task(p);

  CHECK_THROWS_AS(h.repo.upload(task.task_id, p.client_token, train_result({1}, 1, 1, 1)),
                  Forbidden);
  CHECK_THROWS_AS(h.repo.upload(task.task_id + 1, task.lease_token, train_result({1}, 1, 1, 1)),
                  NotFound);
  CHECK(h.status(p)["reports"] == 0);
}

TEST_CASE("invalid_uploads_get_400_and_leave_the_round_unchanged", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 2, 2));
  const TaskAssignment task = h.claim_task(p);
  const std::string good = train_result({1}, 1, 1, 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  core::NamedTensors wrong_shape;
  wrong_shape.emplace("out/weight", test::dense_f32({2, 2}, [](std::size_t) { return 1; }));

  CHECK_THROWS_AS(h.upload(task, good.substr(0, good.size() - 3)), InvalidInput);  // truncated
  CHECK_THROWS_AS(h.upload(task, train_result({1}, nan, 1, 1)), InvalidInput);
  CHECK_THROWS_AS(h.upload(task, train_result({1}, 1, 1, 0)), InvalidInput);  // no examples
  CHECK_THROWS_AS(
      h.upload(task, test::to_string(core::write_safetensors(
                         wrong_shape, {{"kind", "train"}, {"num_examples", "1"}, {"loss", "1"}}))),
      InvalidInput);
  CHECK_THROWS_AS(h.upload(task, "not safetensors at all"), InvalidInput);

  const auto status = h.status(p);
  CHECK(status["reports"] == 0);
  CHECK(status["rejections"]["invalid_result"] == 5);
  CHECK(h.upload(task, good).status == 201);
  CHECK(h.status(p)["reports"] == 1);
}

// Regression: two rounds of finite but huge uploads (3e38 under weighted_mean) published a model
// holding +Infinity; every later upload was rejected and a restart failed on reloading it.
TEST_CASE("huge_finite_uploads_never_publish_a_non_finite_model_and_restart_works",
          "[repository]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  CreatedPopulation p;
  {
    TaskRepository repo(store, clock, metrics, {});
    p = repo.create_population(test_spec("p", 4, 1, 1));
    for (int round = 0; round < 2; ++round) {
      auto task = std::get<TaskAssignment>(repo.claim("p", p.client_token));
      CHECK(
          repo.upload(task.task_id, task.lease_token, train_result({1}, 3e38f, 3e38f, 1)).status ==
          201);
    }
    const auto model = test::decode_dense(*repo.model("p", 2).bytes);
    for (const auto& [name, values] : model) {
      for (float v : values) CHECK(std::isfinite(v));
    }
  }
  TaskRepository restarted(store, clock, metrics, {});
  CHECK(status_json(restarted.status("p"))["state"] == "running");
  auto task = std::get<TaskAssignment>(restarted.claim("p", p.client_token));
  CHECK(restarted.upload(task.task_id, task.lease_token, train_result({1}, 1, 1, 1)).status == 201);
}

}  // namespace fedleaf::server
