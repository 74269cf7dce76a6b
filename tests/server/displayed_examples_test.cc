// What a population shows of its rounds is what the fold used: a report's examples count capped
// at the round's max_examples_per_report, so a leaf claiming 10^9 examples weighs what the cap
// lets it weigh in the status's `examples` and `mean_train_loss` (and the dashboard, which shows
// them), as in the aggregate. Every backend: the round's counters are the store's.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "server/api/wire_json.h"
#include "server/repository/task_repository.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

// kTestPlan with every report's weight capped at 100 examples.
std::string capped_plan() {
  nlohmann::json plan = nlohmann::json::parse(test::kTestPlan);
  plan["max_examples_per_report"] = 100;
  return plan.dump();
}

TaskAssignment claim(TaskRepository& repo, const CreatedPopulation& p) {
  return std::get<TaskAssignment>(repo.claim(p.id, p.client_token));
}

}  // namespace

FEDLEAF_STORE_CASE(a_claim_of_a_billion_examples_counts_as_the_capped_weight_it_folded_with,
                   FEDLEAF_STORE_BACKENDS) {
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
  PopulationSpec spec = test::test_spec("p", 2, 3, 3);
  spec.plan_json = capped_plan();
  spec.settings.eval_tasks_per_round = 2;
  const CreatedPopulation p = repo.create_population(spec);

  // Evaluate tasks come first: one claims a billion examples at loss 0.1, one 50 at loss 0.9.
  const TaskAssignment e1 = claim(repo, p), e2 = claim(repo, p);
  REQUIRE(
      repo.upload(e1.task_id, e1.lease_token, test::eval_result(1'000'000'000, 0.1, 1.0)).status ==
      201);
  REQUIRE(repo.upload(e2.task_id, e2.lease_token, test::eval_result(50, 0.9, 0.0)).status == 201);
  // Train reports the same way; a third keeps round 0 open (clients_per_round 3).
  const TaskAssignment a = claim(repo, p), b = claim(repo, p);
  REQUIRE(
      repo.upload(a.task_id, a.lease_token, test::train_result({1}, 0.5f, 0.5f, 1'000'000'000, 0.1))
          .status == 201);
  REQUIRE(
      repo.upload(b.task_id, b.lease_token, test::train_result({1}, 0.5f, 0.5f, 50, 0.9)).status ==
      201);

  const nlohmann::json round0 = status_json(repo.status("p"))["history"][0];
  // The fold weighed them 100 and 50: (100 · 0.1 + 50 · 0.9) / 150, not the claims' 0.100.
  CHECK(round0["examples"] == 150.0);
  CHECK(round0["mean_train_loss"].get<double>() == Approx(55.0 / 150).epsilon(1e-12));
  CHECK(round0["eval"]["examples"] == 150.0);
  CHECK(round0["eval"]["loss"].get<double>() == Approx(55.0 / 150).epsilon(1e-12));
  CHECK(round0["eval"]["accuracy"].get<double>() == Approx(100.0 / 150).epsilon(1e-12));
}

}  // namespace fedleaf::server
