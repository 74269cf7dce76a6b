// Wire JSON: the bodies of the v1 API rendered from typed results.
#include "server/api/wire_json.h"

#include <catch2/catch.hpp>

#include "server/repository/round_robustness.h"

namespace fedleaf::server {

using nlohmann::json;

TEST_CASE("urls_name_the_population_round_and_task", "[wire_json]") {
  CHECK(model_url("spam", 3) == "/v1/populations/spam/rounds/3/model");
  CHECK(population_url("spam") == "/v1/populations/spam");
  CHECK(upload_url(7) == "/v1/tasks/7/result");
}

TEST_CASE("receipt_json_is_the_accepted_answer_with_reports_only_for_train", "[wire_json]") {
  CHECK(receipt_json({7, "p", 0, TaskKind::kTrain, 2, "ab"}) ==
        R"({"kind":"train","population":"p","reports":2,"result_sha256":"ab","round":0,)"
        R"("status":"accepted","task_id":7})");
  CHECK(receipt_json({8, "p", 1, TaskKind::kEvaluate, std::nullopt, "cd"}) ==
        R"({"kind":"evaluate","population":"p","result_sha256":"cd","round":1,)"
        R"("status":"accepted","task_id":8})");
}

TEST_CASE("task_json_splices_the_plan_and_names_the_urls", "[wire_json]") {
  TaskAssignment task;
  task.task_id = 5;
  task.population = "p";
  task.round = 2;
  task.kind = TaskKind::kTrain;
  task.lease_token = "t";
  task.lease_expires_at = 100;
  task.plan_json = R"({"kind":"train"})";
  task.model_etag = "e";

  const json body = json::parse(task_json(task));

  CHECK(body["plan"]["kind"] == "train");
  CHECK(body["model_url"] == "/v1/populations/p/rounds/2/model");
  CHECK(body["upload_url"] == "/v1/tasks/5/result");
  CHECK(body["lease_expires_at"] == 100);
}

TEST_CASE("status_json_of_a_quarantined_population_says_failed_and_why", "[wire_json]") {
  PopulationStatus status;
  status.record.id = "bad";
  status.failure_reason = "model not finite";

  CHECK(status_json(status) ==
        json{{"id", "bad"}, {"state", "failed"}, {"failure_reason", "model not finite"}});
}

TEST_CASE("status_json_averages_train_and_eval_metrics_by_examples", "[wire_json]") {
  PopulationStatus status;
  status.record.id = "p";
  status.plan_json = "{}";
  RoundRecord r;
  r.status = RoundStatus::kClosed;
  r.examples = 4;
  r.loss_sum = 2;
  r.started_at = 10;
  r.closed_at = 13;
  r.eval_reports = 1;
  r.eval_examples = 2;
  r.eval_sums_json = R"({"loss": 1.0})";
  r.robust_json = R"({"clipped": {"emb/weight": 2}, "capped": 1, "withheld_nonfinite": 0})";
  status.history.push_back({r, read_robustness(r.robust_json)});
  status.rejections["conflict"] = 2;

  const json body = status_json(status);

  CHECK(body["history"][0]["mean_train_loss"] == 0.5);
  CHECK(body["history"][0]["mean_train_accuracy"].is_null());
  CHECK(body["history"][0]["duration_s"] == 3);
  CHECK(body["history"][0]["eval"]["loss"] == 0.5);
  CHECK(body["history"][0]["robust"]["clipped"]["emb/weight"] == 2);
  CHECK(body["history"][0]["robust"]["capped"] == 1);
  CHECK(body["rejections"]["conflict"] == 2);
}

TEST_CASE("status_json_renders_each_rounds_robustness_byte_identical_to_its_stored_form",
          "[wire_json]") {
  // Forms a row holds: a closed round now, an open round's bounds and cap, an older server's row.
  for (const std::string stored :
       {std::string(R"({"capped":2,"clip_bound":{"emb/weight":0.30000000000000004},)"
                    R"("clipped":{"emb/weight":3},"clipped_rows":{"emb/weight":5},)"
                    R"("example_cap":null,"next_clip_bound":{"emb/weight":1e-07},)"
                    R"("next_example_cap":604,"withheld_nonfinite":7,)"
                    R"("withheld_rows":{"emb/weight":41}})"),
        std::string(R"({"clip_bound":{"a":0.5},"example_cap":606})"), std::string("{}"),
        std::string(R"({"capped":1,"clipped":{"emb/weight":2},"withheld_nonfinite":0})")}) {
    PopulationStatus status;
    status.record.id = "p";
    status.plan_json = "{}";
    RoundRecord r;
    r.robust_json = stored;
    status.history.push_back({r, read_robustness(stored)});

    const json body = status_json(status);

    CHECK(body["history"][0]["robust"].dump() == stored);
  }
}

// A buffered version's staleness counts are stored in robust_json but shown beside "robust",
// with their mean and maximum; a buffered population's status says how many train tasks are out.
TEST_CASE("status_json_shows_a_versions_staleness_beside_robust_and_the_tasks_out", "[wire_json]") {
  PopulationStatus status;
  status.record.id = "p";
  status.record.settings.buffered_json = R"({"buffer_size":4,"concurrency":6})";
  status.plan_json = "{}";
  status.tasks_out = 5;
  RoundRecord closed;
  closed.robust_json = R"({"capped":0,"staleness":{"0":2,"1":1,"4":1}})";
  status.history.push_back({closed, read_robustness(closed.robust_json)});
  RoundRecord open;
  open.robust_json = "{}";
  status.history.push_back({open, read_robustness(open.robust_json)});

  const json body = status_json(status);

  CHECK(body["tasks_out"] == 5);
  CHECK(body["history"][0]["robust"] == json{{"capped", 0}});
  CHECK(body["history"][0]["staleness"]["counts"] == json{{"0", 2}, {"1", 1}, {"4", 1}});
  CHECK(body["history"][0]["staleness"]["mean"] == 1.25);
  CHECK(body["history"][0]["staleness"]["max"] == 4);
  CHECK_FALSE(body["history"][1].contains("staleness"));
}

TEST_CASE("populations_json_lists_every_summary", "[wire_json]") {
  const json body = populations_json({{"a", "running", 1, 3, 2}, {"b", "failed", 0, 1, 1}});
  CHECK(body["populations"].size() == 2);
  CHECK(body["populations"][1]["state"] == "failed");
  CHECK(body["populations"][0]["clients_per_round"] == 2);
  CHECK_FALSE(body["populations"][0].contains("mode"));
}

TEST_CASE("populations_json_names_the_mode_of_a_buffered_population_only", "[wire_json]") {
  const json body =
      populations_json({{"sync", "running", 1, 3, 2, false}, {"buf", "running", 4, 30, 16, true}});
  CHECK_FALSE(body["populations"][0].contains("mode"));
  CHECK(body["populations"][1]["mode"] == "buffered");
  CHECK(body["populations"][1]["round"] == 4);
}

}  // namespace fedleaf::server
