// TaskRepository with a fake clock: claims, leases and their expiry, parked claims woken.
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

TEST_CASE("open_leases_counts_unexpired_leases", "[repository]") {
  Harness h;
  auto p = h.repo.create_population(test_spec("p", 1, 3, 3));
  h.claim_task(p);
  h.claim_task(p);

  CHECK(h.repo.open_leases() == 2);
  h.clock.advance(11);
  CHECK(h.repo.open_leases() == 0);
}

// A claim's step leaves the batch open, and a parked claim asks for no answer's commit: the
// tick commits what is open, or a round it closed there keeps its rows locked against every
// other server of a shared store until the next request reaches this one.
TEST_CASE("tick_commits_a_batch_it_found_open", "[repository]") {
  SqliteFileBackend backend;
  const std::unique_ptr<Store> store = backend.open();
  const std::unique_ptr<Store> other = backend.open();  // another server's connection
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo{*store, clock, metrics, TaskRepositoryOptions{}};
  const CreatedPopulation p = repo.create_population(test_spec("p", 1, 1, 1));
  REQUIRE(std::holds_alternative<TaskAssignment>(repo.claim(p.id, p.client_token)));
  CHECK(other->count_active_leases(clock.now()) == 0);  // the claim's lease is not committed

  repo.tick();

  CHECK(other->count_active_leases(clock.now()) == 1);
}

}  // namespace fedleaf::server
