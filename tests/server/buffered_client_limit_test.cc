// What one client can hold of a population: a buffered report refused as stale (409) gives its
// slot back at once, and a population's max_tasks_per_client answers a client holding that many
// tasks with 429 naming the rule, with Retry-After when its first lease expires — in buffered
// and synchronous populations, on every backend, and across servers sharing a store.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "core/aggregation/round/buffered_spec.h"
#include "server/api/population_body.h"
#include "server/api/wire_json.h"
#include "server/repository/task_repository.h"
#include "server/util/server_errors.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

// K = `buffer_size`, `concurrency` tasks out at once, max_staleness 0; 5 versions; 10 s leases.
PopulationSpec buffered(const std::string& id, int buffer_size, int concurrency) {
  PopulationSpec spec = test::test_spec(id, 5, 2, 2);
  core::BufferedSpec b;
  b.buffer_size = static_cast<std::uint64_t>(buffer_size);
  b.concurrency = static_cast<std::uint64_t>(concurrency);
  b.max_staleness = 0;
  spec.settings.buffered_json = core::buffered_spec_json(b);
  spec.settings.train_tasks_per_round = concurrency;
  spec.settings.clients_per_round = spec.settings.min_reports = buffer_size;
  return spec;
}

TaskAssignment claim(TaskRepository& repo, const CreatedPopulation& p) {
  ClaimOutcome c = repo.claim(p.id, p.client_token);
  REQUIRE(std::holds_alternative<TaskAssignment>(c));
  return std::get<TaskAssignment>(c);
}

int upload(TaskRepository& repo, const TaskAssignment& t) {
  const int status =
      repo.upload(t.task_id, t.lease_token, test::train_result({1}, 0.1f, 0.1f, 2)).status;
  repo.commit_batch();  // as the server does before it answers (PostgreSQL batches the close)
  return status;
}

// The 429 a claim gets; fails the test when the claim is answered otherwise.
TooManyRequests refused_claim(TaskRepository& repo, const CreatedPopulation& p) {
  try {
    repo.claim(p.id, p.client_token);
  } catch (const TooManyRequests& e) {
    return e;
  }
  FAIL("the claim was not refused with 429");
  return TooManyRequests("");
}

}  // namespace

FEDLEAF_STORE_CASE(a_report_refused_as_stale_gives_its_slot_back_at_once, FEDLEAF_STORE_BACKENDS) {
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
  const CreatedPopulation p = repo.create_population(buffered("p", 1, 2));
  const TaskAssignment a = claim(repo, p), stale = claim(repo, p);
  REQUIRE(upload(repo, a) == 201);  // version 1: stale is now 1 version old (> max_staleness 0)
  claim(repo, p);                   // a's slot, on version 1: both slots out again
  CHECK(std::holds_alternative<RetryLater>(repo.claim(p.id, p.client_token)));

  CHECK_THROWS_AS(upload(repo, stale), Conflict);
  CHECK(status_json(repo.status("p"))["tasks_out"] == 1);
  const TaskAssignment freed = claim(repo, p);  // the slot is free now, not at the lease's expiry
  CHECK(freed.round == 1);
  // The same upload again: its lease ended with the refusal (410), counted once.
  CHECK_THROWS_AS(upload(repo, stale), Gone);
  CHECK(repo.status("p").rejections.at("stale") == 1);
}

FEDLEAF_STORE_CASE(a_client_at_max_tasks_per_client_gets_429_naming_the_rule,
                   FEDLEAF_STORE_BACKENDS) {
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
  PopulationSpec spec = buffered("p", 4, 8);
  spec.settings.max_tasks_per_client = 2;
  const CreatedPopulation p = repo.create_population(spec);
  const double start = clock.now();
  const TaskAssignment a = claim(repo, p);
  clock.advance(3);
  claim(repo, p);

  const TooManyRequests refused = refused_claim(repo, p);
  CHECK_THAT(refused.what(), Catch::Contains("holds 2 tasks, its max_tasks_per_client (2)"));
  CHECK(refused.retry_after_s() == Approx(start + 10 - clock.now()));  // a's lease expires
  CHECK(status_json(repo.status("p"))["max_tasks_per_client"] == 2);
  CHECK(status_json(repo.status("p"))["tasks_out"] == 2);  // of concurrency 8

  REQUIRE(upload(repo, a) == 201);  // a report frees one
  claim(repo, p);
  refused_claim(repo, p);
  clock.advance(10);  // every lease expired: the client holds none
  claim(repo, p);
}

// A synchronous round one client could otherwise hold whole until its leases expire.
FEDLEAF_STORE_CASE(a_synchronous_population_bounds_the_tasks_a_client_holds,
                   FEDLEAF_STORE_BACKENDS) {
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
  PopulationSpec spec = test::test_spec("s", 2, 4, 4);
  spec.settings.max_tasks_per_client = 1;
  const CreatedPopulation p = repo.create_population(spec);
  const TaskAssignment a = claim(repo, p);
  CHECK_THAT(refused_claim(repo, p).what(), Catch::Contains("max_tasks_per_client (1)"));
  REQUIRE(upload(repo, a) == 201);
  CHECK(claim(repo, p).round == 0);
}

// Two servers on one store: the bound counts the client's tasks from both.
FEDLEAF_STORE_CASE(two_servers_sharing_a_store_hold_a_clients_bound_together,
                   FEDLEAF_SHARED_STORE_BACKENDS) {
  const std::unique_ptr<Store> other = backend.open();
  FakeClock clock;
  ServerMetrics metrics_a, metrics_b;
  TaskRepository a(store, clock, metrics_a, TaskRepositoryOptions{});
  TaskRepository b(*other, clock, metrics_b, TaskRepositoryOptions{});
  PopulationSpec spec = buffered("p", 4, 8);
  spec.settings.max_tasks_per_client = 2;
  const CreatedPopulation p = a.create_population(spec);
  a.commit_batch();
  claim(a, p);
  a.commit_batch();
  claim(b, p);
  b.commit_batch();
  refused_claim(a, p);
  a.commit_batch();  // on PostgreSQL, a's claim holds the client's lock until its batch commits
  refused_claim(b, p);
}

TEST_CASE("max_tasks_per_client_is_a_population_field_of_both_modes", "[population_body]") {
  const char* plan = R"("plan": {}, "seed": 1)";
  CHECK(parse_population_body(std::string("{") + plan + R"(, "max_tasks_per_client": 3})")
            .settings.max_tasks_per_client == 3);
  CHECK(
      parse_population_body(std::string("{") + plan +
                            R"(, "mode": "buffered", "buffer_size": 2, "max_tasks_per_client": 1})")
          .settings.max_tasks_per_client == 1);
  CHECK(parse_population_body(std::string("{") + plan + "}").settings.max_tasks_per_client == 0);
  CHECK_THROWS_WITH(
      parse_population_body(std::string("{") + plan + R"(, "max_tasks_per_client": 0})"),
      Catch::Contains("'max_tasks_per_client' must be in [1, 10000000]"));
}

}  // namespace fedleaf::server
