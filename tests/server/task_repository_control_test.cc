// TaskRepository's operator actions (PopulationControl): pause (claims answer paused; leases in
// flight still report and are folded; rounds close by their rules, the deadline ticking on),
// resume, finish (the open round closed without a next model, the reason kept), the transitions
// refused with Conflict changing nothing, and the state kept across a restart (SQLite file) and
// across servers sharing one PostgreSQL store.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "server/api/wire_json.h"
#include "server/util/server_errors.h"
#include "tests/core/error_matchers.h"
#include "tests/server/repository_harness.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

using Harness = RepositoryHarness;
using test::MessageContains;
using test::test_spec;
using test::train_result;

std::string result(int i) { return train_result({i % 10}, 0.5f, 0.1f * static_cast<float>(i), 4); }

}  // namespace

TEST_CASE("a_paused_population_hands_out_no_task_and_its_leases_in_flight_still_count",
          "[repository][control]") {
  Harness h;
  const CreatedPopulation p = h.repo.create_population(test_spec("p", 2, 2, 1));
  const TaskAssignment t1 = h.claim_task(p);
  const TaskAssignment t2 = h.claim_task(p);

  h.repo.pause(p.id);

  const RetryLater paused = h.claim_retry(p);
  CHECK(paused.paused);
  CHECK_FALSE(paused.finished);
  CHECK(paused.retry_after_s == kPausedRetryS);
  CHECK(h.status(p)["state"] == "paused");
  CHECK(h.upload(t1, result(1)).status == 201);
  CHECK(h.upload(t2, result(2)).status == 201);  // the round's quorum: it closes while paused
  CHECK(h.status(p)["round"] == 1);
  CHECK(h.status(p)["state"] == "paused");
  CHECK(h.claim_retry(p).paused);

  h.repo.resume(p.id);

  CHECK(h.status(p)["state"] == "running");
  CHECK(h.claim_task(p).round == 1);
}

// The rule: the round deadline ticks on while paused. A round past its deadline with
// min_reports closes during the pause, as it would have running.
TEST_CASE("a_paused_populations_round_closes_at_its_deadline_with_min_reports",
          "[repository][control]") {
  Harness h;
  const CreatedPopulation p = h.repo.create_population(test_spec("p", 2, 3, 1));
  const TaskAssignment t1 = h.claim_task(p);
  REQUIRE(h.upload(t1, result(1)).status == 201);
  h.repo.pause(p.id);

  h.clock.advance(101);  // past round_deadline_s (100)
  h.repo.tick();

  CHECK(h.status(p)["round"] == 1);
  CHECK(h.status(p)["history"][0]["status"] == "closed");
  CHECK(h.claim_retry(p).paused);
}

TEST_CASE("a_resumed_claim_parked_before_the_pause_is_woken", "[repository][control]") {
  Harness h;
  const CreatedPopulation p = h.repo.create_population(test_spec("p", 2, 1, 1));
  h.claim_task(p);  // the round's only train task
  h.park_claim(p);
  h.repo.pause(p.id);
  const int before = h.woken;

  h.repo.resume(p.id);

  CHECK(h.woken > before);
}

TEST_CASE("a_finished_population_closes_its_round_without_a_next_model_and_keeps_its_reason",
          "[repository][control]") {
  Harness h;
  const CreatedPopulation p = h.repo.create_population(test_spec("p", 3, 2, 2));
  const TaskAssignment t1 = h.claim_task(p);
  const TaskAssignment t2 = h.claim_task(p);
  REQUIRE(h.upload(t1, result(1)).status == 201);

  h.repo.finish(p.id, "accuracy reached 0.9");

  const nlohmann::json status = h.status(p);
  CHECK(status["state"] == "finished");
  CHECK(status["finish_reason"] == "accuracy reached 0.9");
  CHECK(status["round"] == 0);
  CHECK(status["history"][0]["status"] == "closed");
  const RetryLater retry = h.claim_retry(p);
  CHECK(retry.finished);
  CHECK_THROWS_MATCHES(h.upload(t2, result(2)), Gone, MessageContains("round 0"));
  CHECK_THROWS_AS(h.repo.model(p.id, 1), NotFound);
  CHECK(h.repo.model(p.id, 0).etag == p.model_etag);
}

TEST_CASE("a_finish_without_a_reason_records_the_operator", "[repository][control]") {
  Harness h;
  const CreatedPopulation p = h.repo.create_population(test_spec("p", 1, 1, 1));
  h.repo.pause(p.id);

  h.repo.finish(p.id, "");

  CHECK(h.status(p)["state"] == "finished");
  CHECK(h.status(p)["finish_reason"] == "finished by an operator");
}

TEST_CASE("a_transition_the_state_does_not_allow_is_conflict_and_changes_nothing",
          "[repository][control]") {
  Harness h;
  const CreatedPopulation p = h.repo.create_population(test_spec("p", 2, 2, 1));

  CHECK_THROWS_MATCHES(h.repo.resume(p.id), Conflict,
                       MessageContains("only a paused population can be resumed"));
  CHECK(h.status(p)["state"] == "running");
  h.repo.pause(p.id);
  CHECK_THROWS_MATCHES(h.repo.pause(p.id), Conflict,
                       MessageContains("paused already: only a running population can be paused"));
  CHECK(h.status(p)["state"] == "paused");
  h.repo.finish(p.id, "done");
  for (const char* action : {"pause", "resume", "finish"}) {
    INFO(action);
    const std::string name = action;
    auto act = [&] {
      if (name == "pause") h.repo.pause(p.id);
      if (name == "resume") h.repo.resume(p.id);
      if (name == "finish") h.repo.finish(p.id, "again");
    };
    CHECK_THROWS_MATCHES(act(), Conflict,
                         MessageContains("population 'p' is finished: it cannot be"));
  }
  CHECK(h.status(p)["finish_reason"] == "done");
  CHECK_THROWS_AS(h.repo.pause("nope"), NotFound);
  CHECK_THROWS_AS(h.repo.finish("nope", ""), NotFound);
}

TEST_CASE("a_pause_and_a_finish_reason_hold_across_a_restart", "[repository][control]") {
  SqliteFileBackend backend;
  FakeClock clock;
  ServerMetrics metrics;
  CreatedPopulation p;
  CreatedPopulation q;
  {
    auto store = backend.open();
    TaskRepository repo(*store, clock, metrics, {});
    p = repo.create_population(test_spec("p", 2, 2, 1));
    q = repo.create_population(test_spec("q", 2, 2, 1));
    repo.pause(p.id);
    repo.finish(q.id, "wrong plan");
  }
  auto store = backend.open();
  TaskRepository repo(*store, clock, metrics, {});

  const ClaimOutcome claimed = repo.claim(p.id, p.client_token);
  REQUIRE(std::holds_alternative<RetryLater>(claimed));
  CHECK(std::get<RetryLater>(claimed).paused);
  CHECK(status_json(repo.status(p.id))["state"] == "paused");
  CHECK(status_json(repo.status(q.id))["state"] == "finished");
  CHECK(status_json(repo.status(q.id))["finish_reason"] == "wrong plan");
  repo.resume(p.id);
  CHECK(std::holds_alternative<TaskAssignment>(repo.claim(p.id, p.client_token)));
}

// Two servers on one PostgreSQL store: what one does, the other's claims see at once (B has the
// population loaded and leases from its loaded round without re-reading it).
TEST_CASE("a_pause_resume_and_finish_hold_across_servers_sharing_a_store",
          "[repository][control][postgres]") {
  PostgresBackend backend;
  std::unique_ptr<Store> store_a = backend.open();
  if (!store_a) return;
  std::unique_ptr<Store> store_b = backend.open();
  FakeClock clock;
  ServerMetrics metrics_a;
  ServerMetrics metrics_b;
  TaskRepository a(*store_a, clock, metrics_a, {});
  const CreatedPopulation p = a.create_population(test_spec("p", 2, 4, 1));
  TaskRepository b(*store_b, clock, metrics_b, {});
  const auto claim_b = [&] {
    ClaimOutcome outcome = b.claim(p.id, p.client_token);
    b.commit_batch();
    return outcome;
  };
  REQUIRE(std::holds_alternative<TaskAssignment>(claim_b()));

  a.pause(p.id);

  ClaimOutcome outcome = claim_b();
  REQUIRE(std::holds_alternative<RetryLater>(outcome));
  CHECK(std::get<RetryLater>(outcome).paused);
  CHECK(status_json(b.status(p.id))["state"] == "paused");
  CHECK_THROWS_AS(b.pause(p.id), Conflict);

  b.resume(p.id);
  CHECK(std::holds_alternative<TaskAssignment>(a.claim(p.id, p.client_token)));
  a.commit_batch();
  CHECK(std::holds_alternative<TaskAssignment>(claim_b()));

  a.finish(p.id, "stopped");
  outcome = claim_b();
  REQUIRE(std::holds_alternative<RetryLater>(outcome));
  CHECK(std::get<RetryLater>(outcome).finished);
  CHECK(status_json(b.status(p.id))["finish_reason"] == "stopped");
  CHECK_THROWS_AS(b.resume(p.id), Conflict);
}

}  // namespace fedleaf::server
