// TaskRepository with a fake clock: leases, uploads, rounds, deadlines, auth, restart.
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
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

using test::eval_result;
using test::MessageContains;
using test::test_spec;
using test::train_result;

struct Harness {
  SqliteStore store{":memory:"};
  FakeClock clock;
  ServerMetrics metrics;
  int woken = 0;  // wake-ups of the claims park_claim() parked (declared before repo: outlives it)
  TaskRepository repo{store, clock, metrics, TaskRepositoryOptions{}};

  TaskAssignment claim_task(const CreatedPopulation& p) {
    ClaimOutcome outcome = repo.claim(p.id, p.client_token);
    REQUIRE(std::holds_alternative<TaskAssignment>(outcome));
    return std::get<TaskAssignment>(outcome);
  }
  RetryLater claim_retry(const CreatedPopulation& p) {
    ClaimOutcome outcome = repo.claim(p.id, p.client_token);
    REQUIRE(std::holds_alternative<RetryLater>(outcome));
    return std::get<RetryLater>(outcome);
  }
  UploadOutcome upload(const TaskAssignment& task, const std::string& body) {
    return repo.upload(task.task_id, task.lease_token, body);
  }
  // Claims (the answer must be RetryLater) and parks that claim until its wake epoch passes.
  void park_claim(const CreatedPopulation& p) {
    const RetryLater retry = claim_retry(p);
    repo.waiters().park(p.id, retry.wake_epoch, [this] { ++woken; });
  }
  nlohmann::json status(const CreatedPopulation& p) { return status_json(repo.status(p.id)); }
};

std::string model_of(TaskRepository& repo, const std::string& id, int round) {
  return *repo.model(id, round).bytes;
}

}  // namespace

TEST_CASE("claim_hands_out_train_tasks_up_to_the_pool_then_retry_later", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 2, 2, 2));

  const TaskAssignment a = h.claim_task(p);
  const TaskAssignment b = h.claim_task(p);
  const RetryLater retry = h.claim_retry(p);

  CHECK(a.task_id != b.task_id);
  CHECK(a.lease_token != b.lease_token);
  CHECK(a.kind == TaskKind::kTrain);
  CHECK(a.round == 0);
  CHECK(a.lease_expires_at == h.clock.now() + 10);
  CHECK(a.model_etag == p.model_etag);
  CHECK(nlohmann::json::parse(a.plan_json)["kind"] == "train");
  CHECK_FALSE(retry.finished);
  // The first lease expires in 10 s, but the round may close sooner: poll every round_poll_s.
  CHECK(retry.retry_after_ms == 1000 * round_poll_s(2));
  CHECK(retry.retry_after_ms == 1000 * kMinRoundPollS);
  CHECK(retry.retry_after_s == 1);
  CHECK(h.status(p)["plan"]["updates"].contains("emb/weight"));
}

TEST_CASE("a_parked_claim_is_woken_by_the_upload_that_opens_the_next_round", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 2, 1, 1));
  const TaskAssignment task = h.claim_task(p);
  h.park_claim(p);

  CHECK(h.woken == 0);
  h.upload(task, train_result({1}, 1.f, 1.f, 3));  // closes round 0, opens round 1

  CHECK(h.woken == 1);  // during the upload: no clock needed to see the new round
  CHECK(h.claim_task(p).round == 1);
}

TEST_CASE("an_upload_that_closes_a_round_times_its_fold_and_each_step_of_the_close",
          "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 2, 2, 2));
  const TaskAssignment a = h.claim_task(p);
  const TaskAssignment b = h.claim_task(p);
  h.upload(a, train_result({1}, 1.f, 1.f, 3));
  const std::string before_close = h.metrics.render(0, 0);

  h.upload(b, train_result({2}, 1.f, 1.f, 3));  // closes round 0

  const std::string text = h.metrics.render(0, 0);
  const auto count = [&](const std::string& phase) {
    const std::string key = "fedleaf_phase_seconds_count{phase=\"" + phase + "\"} ";
    const auto at = text.find(key);
    return at == std::string::npos ? -1 : std::stoi(text.substr(at + key.size()));
  };
  CHECK(before_close.find("phase=\"close_encode\"") == std::string::npos);
  CHECK(count("fold") == 2);
  for (const char* phase : {"close_finalize", "close_encode", "close_hash", "close_store"}) {
    CHECK(count(phase) == 1);
  }
}

TEST_CASE("a_claim_that_found_nothing_before_the_round_opened_wakes_when_parked_late",
          "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 2, 1, 1));
  const TaskAssignment task = h.claim_task(p);
  const RetryLater retry = h.claim_retry(p);
  h.upload(task, train_result({1}, 1.f, 1.f, 3));
  int woken = 0;

  h.repo.waiters().park(p.id, retry.wake_epoch, [&] { ++woken; });

  CHECK(woken == 1);
  CHECK(h.repo.waiters().waiting() == 0);
}

TEST_CASE("tick_wakes_parked_claims_when_a_lease_expired", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 1, 1));
  h.claim_task(p);
  h.park_claim(p);

  h.repo.tick();
  CHECK(h.woken == 0);  // the lease holds
  h.clock.advance(11);
  h.repo.tick();

  CHECK(h.woken == 1);
  CHECK(h.claim_task(p).round == 0);
}

TEST_CASE("parked_claims_learn_that_the_population_finished", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 1, 1));
  const TaskAssignment task = h.claim_task(p);
  h.park_claim(p);

  h.upload(task, train_result({1}, 1.f, 1.f, 3));

  CHECK(h.woken == 1);
  CHECK(h.claim_retry(p).finished);
}

TEST_CASE("claim_with_min_round_skips_train_tasks_of_earlier_rounds", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 2, 2, 2));
  const TaskAssignment first = h.claim_task(p);

  const ClaimOutcome same_round = h.repo.claim(p.id, p.client_token, /*min_round=*/1);
  REQUIRE(std::holds_alternative<RetryLater>(same_round));
  CHECK(std::get<RetryLater>(same_round).retry_after_ms <= 1000 * round_poll_s(2));
  const TaskAssignment second = h.claim_task(p);
  h.upload(first, train_result({1}, 1.f, 1.f, 3));
  h.upload(second, train_result({2}, 1.f, 1.f, 3));
  const ClaimOutcome next_round = h.repo.claim(p.id, p.client_token, /*min_round=*/1);

  REQUIRE(std::holds_alternative<TaskAssignment>(next_round));
  CHECK(std::get<TaskAssignment>(next_round).round == 1);
}

TEST_CASE("expired_lease_returns_task_to_pool_and_late_upload_gets_410", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 1, 1));
  const TaskAssignment first = h.claim_task(p);
  h.claim_retry(p);

  h.clock.advance(10);
  const TaskAssignment second = h.claim_task(p);

  CHECK(second.task_id == first.task_id);
  CHECK(second.lease_token != first.lease_token);
  CHECK_THROWS_MATCHES(h.upload(first, train_result({1}, 1, 1, 1)), Gone,
                       MessageContains("leased again"));
  CHECK(h.upload(second, train_result({1}, 1, 1, 1)).status == 201);
}

TEST_CASE("release_lease_returns_the_task_at_once_and_wakes_the_parked_claims", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 1, 1));
  const TaskAssignment undelivered = h.claim_task(p);
  h.park_claim(p);

  h.repo.release_lease(undelivered.task_id, "not-its-lease-token");
  CHECK(h.woken == 0);
  h.repo.release_lease(undelivered.task_id, undelivered.lease_token);
  CHECK(h.woken == 1);
  const TaskAssignment again = h.claim_task(p);  // at once: no lease had to expire

  CHECK(again.task_id == undelivered.task_id);
  CHECK_THROWS_AS(h.upload(undelivered, train_result({1}, 1, 1, 1)), Gone);
  CHECK(h.upload(again, train_result({1}, 1, 1, 1)).status == 201);
}

TEST_CASE("upload_after_lease_expiry_without_reassignment_gets_410", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 1, 1));
  const TaskAssignment task = h.claim_task(p);

  h.clock.advance(10.5);

  CHECK_THROWS_MATCHES(h.upload(task, train_result({1}, 1, 1, 1)), Gone,
                       MessageContains("lease expired"));
  CHECK(h.status(p)["rejections"]["lease_expired"] == 1);
  CHECK(h.status(p)["reports"] == 0);
}

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

TEST_CASE("quorum_closes_the_round_and_publishes_the_aggregate", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 2, 2, 2));
  const std::vector<test::TrainUpload> uploads = {{{1, 3}, 0.5f, 0.25f, 3},
                                                  {{3, 7}, -1.0f, 1.0f, 1}};
  const TaskAssignment a = h.claim_task(p);
  const TaskAssignment b = h.claim_task(p);

  h.upload(a, train_result(uploads[0].rows, uploads[0].row_value, uploads[0].dense_value, 3, 0.5));
  CHECK(h.status(p)["round"] == 0);
  h.upload(b, train_result(uploads[1].rows, uploads[1].row_value, uploads[1].dense_value, 1, 1.5));

  const auto status = h.status(p);
  CHECK(status["round"] == 1);
  CHECK(status["history"][0]["status"] == "closed");
  CHECK(status["history"][0]["reports"] == 2);
  CHECK(status["history"][0]["examples"] == 4.0);
  CHECK(status["history"][0]["mean_train_loss"].get<double>() == Approx(0.75));
  CHECK(status["history"][0]["upload_bytes"].get<std::int64_t>() > 0);
  CHECK(test::models_close(test::decode_dense(model_of(h.repo, "p", 1)),
                           test::reference_next_model(uploads)));
  CHECK(h.claim_task(p).round == 1);
  CHECK(model_of(h.repo, "p", 0) == test::test_model_bytes());
}

// Regression: min_contributors defaulted to 2, which a round of one report never meets: a
// population with clients_per_round 1 withheld every embedding row, every round.
TEST_CASE("a_population_of_one_report_per_round_changes_the_rows_its_reports_send",
          "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 2, 1, 1));

  h.upload(h.claim_task(p), train_result({1}, 0.5f, 0.25f, 3));

  const std::vector<float> before = test::decode_dense(test::test_model_bytes())["emb/weight"];
  const std::vector<float> after = test::decode_dense(model_of(h.repo, "p", 1))["emb/weight"];
  CHECK(after[2] == Approx(before[2] + core::kDefaultClipRms));  // row 1, clipped to 0.01
  CHECK(after[3] == Approx(before[3] + core::kDefaultClipRms));
  CHECK(after[0] == before[0]);  // a row no report sent
}

TEST_CASE("deadline_with_min_reports_closes_the_round", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 2, 3, 1));
  const TaskAssignment a = h.claim_task(p);
  h.upload(a, train_result({2}, 2.0f, 0.5f, 2));

  h.clock.advance(99);
  h.repo.tick();
  CHECK(h.status(p)["round"] == 0);
  h.clock.advance(1);
  h.repo.tick();

  const auto status = h.status(p);
  CHECK(status["round"] == 1);
  CHECK(status["history"][0]["duration_s"].get<double>() == Approx(100));
  CHECK(
      test::models_close(test::decode_dense(model_of(h.repo, "p", 1)),
                         test::reference_next_model({{{2}, 2.0f, 0.5f, 2}}, 1)));  // min_reports 1
}

TEST_CASE("deadline_without_min_reports_keeps_the_round_open_until_min_reports", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 2, 3, 2));
  const TaskAssignment a = h.claim_task(p);
  const TaskAssignment b = h.claim_task(p);
  h.upload(a, train_result({2}, 2.0f, 0.5f, 2));

  h.clock.advance(150);
  h.repo.tick();
  CHECK(h.status(p)["round"] == 0);
  CHECK(h.status(p)["state"] == "running");

  const TaskAssignment c = h.claim_task(p);  // b's lease expired; the pool still has a task
  CHECK_THROWS_AS(h.upload(b, train_result({4}, 1, 1, 1)), Gone);
  h.upload(c, train_result({4}, 1.0f, 1.0f, 1));

  CHECK(h.status(p)["round"] == 1);
  CHECK(h.status(p)["history"][0]["reports"] == 2);
}

TEST_CASE("last_round_finishes_the_population_and_claims_say_finished", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 1, 1));
  h.upload(h.claim_task(p), train_result({1}, 1, 1, 1));

  const RetryLater retry = h.claim_retry(p);

  CHECK(retry.finished);
  CHECK(h.status(p)["state"] == "finished");
  CHECK(h.status(p)["round"] == 1);
  CHECK_FALSE(h.repo.model("p", 1).bytes->empty());
  CHECK_THROWS_AS(h.repo.model("p", 2), NotFound);
}

// The documented shape of a finished population's history (src/server/README.md): one entry per
// training round, then the final model's round, which trains nothing and, without evaluate
// tasks, closes the moment it opens.
TEST_CASE("a_finished_history_ends_with_the_final_models_round", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 2, 1, 1));
  h.upload(h.claim_task(p), train_result({1}, 1, 1, 1));
  h.clock.advance(3);
  h.upload(h.claim_task(p), train_result({1}, 1, 1, 1));

  const nlohmann::json history = h.status(p)["history"];

  REQUIRE(history.size() == 3);
  CHECK(history[1]["reports"] == 1);
  CHECK(history[2]["round"] == 2);
  CHECK(history[2]["status"] == "closed");
  CHECK(history[2]["reports"] == 0);
  CHECK(history[2]["duration_s"] == 0.0);
}

TEST_CASE("evaluate_tasks_report_metrics_for_their_rounds_model", "[repository]") {
  Harness h;
  auto spec = test_spec("p", 1, 1, 1);
  spec.settings.eval_tasks_per_round = 1;
  auto p = h.repo.create_population(spec);

  const TaskAssignment eval0 = h.claim_task(p);
  const TaskAssignment train0 = h.claim_task(p);
  CHECK(eval0.kind == TaskKind::kEvaluate);
  CHECK(nlohmann::json::parse(eval0.plan_json)["kind"] == "evaluate");
  CHECK(train0.kind == TaskKind::kTrain);
  h.upload(train0, train_result({1}, 1, 1, 1));  // round 0 closes; round 1 evaluates only
  // An evaluate task stays valid after its round closed: model_0 is still model_0.
  CHECK(h.upload(eval0, eval_result(10, 0.5, 0.75)).status == 201);
  const TaskAssignment eval1 = h.claim_task(p);
  CHECK(eval1.kind == TaskKind::kEvaluate);
  CHECK(eval1.round == 1);
  CHECK_THROWS_AS(h.upload(eval1, train_result({1}, 1, 1, 1)), InvalidInput);
  h.upload(eval1, eval_result(30, 0.25, 0.5));

  const auto status = h.status(p);
  CHECK(status["state"] == "finished");
  CHECK(status["history"][0]["eval"]["reports"] == 1);
  CHECK(status["history"][0]["eval"]["accuracy"].get<double>() == Approx(0.75));
  CHECK(status["history"][1]["eval"]["loss"].get<double>() == Approx(0.25));
  CHECK(status["history"][1]["eval"]["examples"] == 30.0);
}

TEST_CASE("final_evaluation_round_ends_at_its_deadline", "[repository]") {
  Harness h;
  auto spec = test_spec("p", 1, 1, 1);
  spec.settings.eval_tasks_per_round = 2;
  auto p = h.repo.create_population(spec);
  h.claim_task(p);
  h.claim_task(p);
  h.upload(h.claim_task(p), train_result({1}, 1, 1, 1));
  CHECK(h.status(p)["state"] == "running");

  h.clock.advance(100);
  h.repo.tick();

  CHECK(h.status(p)["state"] == "finished");
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

TEST_CASE("create_population_validates_and_rejects_duplicates", "[repository]") {
  Harness h;
  h.repo.create_population(test_spec("p", 1, 1, 1));

  CHECK_THROWS_AS(h.repo.create_population(test_spec("p", 1, 1, 1)), Conflict);
  auto bad_model = test_spec("q", 1, 1, 1);
  bad_model.initial_model = "garbage";
  CHECK_THROWS_AS(h.repo.create_population(bad_model), InvalidInput);
  auto bad_plan = test_spec("r", 1, 1, 1);
  bad_plan.plan_json = R"({"updates": {"out/weight": {"encoding": "dense",
                                                     "aggregator": "sum"}}})";
  CHECK_THROWS_MATCHES(h.repo.create_population(bad_plan), InvalidInput,
                       MessageContains("plan.model"));  // no leaf can run it
  auto model_misses_a_tensor = test_spec("t", 1, 1, 1);
  core::NamedTensors tensors = test::test_model_tensors();
  tensors.erase("out/weight");
  model_misses_a_tensor.initial_model = test::to_string(core::write_safetensors(tensors));
  CHECK_THROWS_MATCHES(h.repo.create_population(model_misses_a_tensor), InvalidInput,
                       MessageContains("out/weight"));
  auto seeded = test_spec("s", 1, 1, 1);
  seeded.initial_model.reset();
  seeded.seed = 3;
  CHECK_THROWS_MATCHES(h.repo.create_population(seeded), InvalidInput, MessageContains("seed"));
  CHECK(h.repo.list_populations().size() == 1);
}

TEST_CASE("create_population_from_seed_uses_the_model_initializer", "[repository]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepositoryOptions options;
  std::uint64_t seen_seed = 0;
  options.model_initializer = [&](const std::string&, std::uint64_t seed) {
    seen_seed = seed;
    const std::string bytes = test::test_model_bytes();
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
  };
  TaskRepository repo(store, clock, metrics, options);
  auto spec = test_spec("s", 1, 1, 1);
  spec.initial_model.reset();
  spec.seed = 42;

  auto p = repo.create_population(spec);

  CHECK(seen_seed == 42);
  CHECK(*repo.model("s", 0).bytes == test::test_model_bytes());
  CHECK(repo.list_populations()[0].id == "s");
}

// Regression: a plan with a 10^8 x 64 table asked for 25 GB under the repository's lock (500,
// "internal server error"); a smaller one that fit in memory froze every other population.
TEST_CASE("create_population_refuses_a_model_over_max_model_bytes_before_making_it",
          "[repository]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepositoryOptions options;
  bool initialized = false;
  options.model_initializer = [&](const std::string&, std::uint64_t) {
    initialized = true;
    const std::string bytes = test::test_model_bytes();
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
  };
  options.max_model_bytes = 4 * (10 * 2 + 2 * 2 + 2) - 1;  // kTestPlan's parameters, less one
  TaskRepository repo(store, clock, metrics, options);
  auto seeded = test_spec("s", 1, 1, 1);
  seeded.initial_model.reset();
  seeded.seed = 1;

  CHECK_THROWS_MATCHES(repo.create_population(seeded), InvalidInput,
                       MessageContains("population: the plan's model declares parameters of 104 "
                                       "bytes, more than this server's --max-model-bytes (103)"));
  CHECK_FALSE(initialized);
  CHECK_THROWS_MATCHES(repo.create_population(test_spec("i", 1, 1, 1)), InvalidInput,
                       MessageContains("initial_model_b64 holds"));
  CHECK(repo.list_populations().empty());
}

TEST_CASE("open_leases_counts_unexpired_leases", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 3, 3));
  h.claim_task(p);
  h.claim_task(p);

  CHECK(h.repo.open_leases() == 2);
  h.clock.advance(11);
  CHECK(h.repo.open_leases() == 0);
}

}  // namespace fedleaf::server

namespace fedleaf::server {

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

TEST_CASE("selectable_model_indexes_each_rounds_model_for_client_token_holders", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 2, 1, 1));
  const SelectableModel round0 = h.repo.selectable_model("p", p.client_token, 0);
  h.upload(h.claim_task(p), train_result({1, 3}, 0.5f, 0.25f, 3, 0.5));

  const SelectableModel round1 = h.repo.selectable_model("p", p.client_token, 1);
  const SelectableModel round0_again = h.repo.selectable_model("p", p.client_token, 0);

  CHECK(round0.model.etag == p.model_etag);
  CHECK(round1.model.etag != p.model_etag);
  CHECK(*round1.model.bytes == model_of(h.repo, "p", 1));
  for (const SelectableModel* m : {&round0, &round1, &round0_again}) {
    const std::string& bytes = *m->model.bytes;
    const core::SafetensorsIndex expected =
        core::index_safetensors(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    CHECK(m->index->file_size == bytes.size());
    CHECK(m->index->arrays.size() == expected.arrays.size());
    CHECK(m->index->arrays.at("emb/weight").begin == expected.arrays.at("emb/weight").begin);
  }
  CHECK(*round0_again.model.bytes == *round0.model.bytes);
  REQUIRE(round1.plan->find("emb/weight"));
  CHECK(round1.plan->find("emb/weight")->download == core::DownloadMode::kSelect);
  CHECK_THROWS_AS(h.repo.selectable_model("p", "not-the-token", 0), Forbidden);
  CHECK_THROWS_AS(h.repo.selectable_model("nobody", p.client_token, 0), NotFound);
  CHECK_THROWS_MATCHES(h.repo.selectable_model("p", p.client_token, 2), NotFound,
                       MessageContains("round 2 of population 'p' has no published model"));
}

}  // namespace fedleaf::server

namespace fedleaf::server {

TEST_CASE("a_closed_round_records_what_robust_aggregation_clipped_and_capped", "[repository]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, {});
  const CreatedPopulation p = repo.create_population(test_spec("p", 2, 2, 2));
  const auto a = std::get<TaskAssignment>(repo.claim("p", p.client_token));
  const auto b = std::get<TaskAssignment>(repo.claim("p", p.client_token));
  // Rows of 5 exceed the default clip of round 0 (RMS kDefaultClipRms), values of
  // kDefaultClipRms / 2 do not; 20,000 examples exceed the default cap (10,000).
  const auto small = static_cast<float>(core::kDefaultClipRms / 2);
  repo.upload(a.task_id, a.lease_token, train_result({1, 2}, 5.0f, small, 20000));
  repo.upload(b.task_id, b.lease_token, train_result({3}, small, small, 3));

  const PopulationStatus status = repo.status("p");

  REQUIRE(status.history.size() == 2);
  const auto robust = nlohmann::json::parse(status.history[0].record.robust_json);
  CHECK(robust["clipped"]["emb/weight"] == 1);
  CHECK(robust["clipped"]["out/weight"] == 0);
  CHECK(robust["capped"] == 1);
  CHECK(robust["withheld_nonfinite"] == 0);
  // The adaptive cap: 10,000 in round 0, then twice the lower median of the claims {20000, 3}.
  CHECK(robust["example_cap"] == core::kDefaultMaxExamplesPerReport);
  CHECK(robust["next_example_cap"] == 6);
  // The open round states the adaptive clip bounds and cap it uses: the closed round's next ones.
  const auto open = nlohmann::json::parse(status.history[1].record.robust_json);
  CHECK(open == nlohmann::json{{"clip_bound", robust["next_clip_bound"]},
                               {"example_cap", robust["next_example_cap"]}});
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

namespace fedleaf::server {
namespace {

// The test model with out/bias stored as F16 and out/weight as BF16.
std::string half_float_test_model(std::uint16_t first_bias_bits) {
  const core::NamedTensors f32 = test::test_model_tensors();
  const auto& emb = std::get<core::DenseTensor>(f32.at("emb/weight"));
  std::vector<std::uint8_t> emb_bytes(emb.nbytes());
  std::memcpy(emb_bytes.data(), emb.raw_data(), emb.nbytes());
  return test::to_string(test::raw_safetensors(
      {{"emb/weight", core::DType::F32, {10, 2}, emb_bytes},
       {"out/bias", core::DType::F16, {2}, test::half_bytes({first_bias_bits, 0x3800})},
       {"out/weight",
        core::DType::BF16,
        {3, 2},
        test::half_bytes({0x0000, 0x3f80, 0x4000, 0xbf80, 0x3e80, 0xc040})}},
      {{"origin", "keras"}}));
}

}  // namespace

TEST_CASE("create_population_publishes_an_f16_or_bf16_initial_model_widened_to_f32",
          "[repository]") {
  Harness h;
  auto spec = test_spec("half", 1, 1, 1);
  spec.initial_model = half_float_test_model(0x3c00);

  const CreatedPopulation created = h.repo.create_population(spec);

  const std::string published = model_of(h.repo, "half", 0);
  CHECK(created.model_etag == sha256_hex(published));
  const core::SafetensorsIndex index = core::index_safetensors(
      reinterpret_cast<const std::uint8_t*>(published.data()), published.size());
  for (const auto& [name, array] : index.arrays) CHECK(array.dtype == core::DType::F32);
  CHECK(index.metadata.at("origin") == "keras");
  const core::NamedTensors tensors = decode_model(published);
  const auto& bias = std::get<core::DenseTensor>(tensors.at("out/bias"));
  CHECK(std::vector<float>(bias.data<float>(), bias.data<float>() + 2) ==
        std::vector<float>{1.0f, 0.5f});
  const auto& weight = std::get<core::DenseTensor>(tensors.at("out/weight"));
  CHECK(std::vector<float>(weight.data<float>(), weight.data<float>() + 6) ==
        std::vector<float>{0.0f, 1.0f, 2.0f, -1.0f, 0.25f, -3.0f});
  CHECK(std::get<core::DenseTensor>(tensors.at("emb/weight")) ==
        std::get<core::DenseTensor>(test::test_model_tensors().at("emb/weight")));
}

TEST_CASE("create_population_rejects_an_f16_initial_model_holding_an_infinity", "[repository]") {
  Harness h;
  auto spec = test_spec("half", 1, 1, 1);
  spec.initial_model = half_float_test_model(0x7c00);

  CHECK_THROWS_MATCHES(h.repo.create_population(spec), InvalidInput,
                       MessageContains("tensor 'out/bias': element 0 is not finite"));
  CHECK(h.repo.list_populations().empty());
}

}  // namespace fedleaf::server
