// TaskRepository with a fake clock: rounds closed by quorum or deadline, evaluation rounds, the
// finished population, what a close records and the models it publishes.
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
using test::eval_result;
using test::MessageContains;
using test::test_spec;
using test::train_result;

}  // namespace

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
