// TaskRepository's client tokens (ClientTokens): an issued token claims and selects like the
// population's first; a revoked one (the first too) gets 403 on claim and model:select while its
// leases already out still report; revoking twice is 409 and unknown ones 404; the tokens hold
// across a restart, and a revocation on one server holds on another sharing its PostgreSQL store.
#include <catch2/catch.hpp>
#include <string>
#include <variant>

#include "server/util/server_errors.h"
#include "server/util/tokens.h"
#include "tests/core/error_matchers.h"
#include "tests/server/repository_harness.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

using test::MessageContains;
using test::test_spec;
using test::train_result;

const char* const kSelectBody = R"({"tensors": {"emb/weight": [1, 2]}})";

}  // namespace

TEST_CASE("an_issued_token_claims_and_a_revoked_one_is_forbidden", "[repository][tokens]") {
  RepositoryHarness h;
  const CreatedPopulation p = h.repo.create_population(test_spec("p", 2, 3, 1));
  const TaskAssignment first_lease = h.claim_task(p);

  const IssuedToken issued = h.repo.issue_client_token(p.id);

  CHECK(issued.id == 1);
  CHECK(issued.client_token != p.client_token);
  CHECK(std::holds_alternative<TaskAssignment>(h.repo.claim(p.id, issued.client_token)));
  CHECK_NOTHROW(h.repo.select_rows(p.id, issued.client_token, 0, kSelectBody, "application/json"));
  const ClientTokenRecord revoked = h.repo.revoke_client_token(p.id, 0);
  CHECK(revoked.id == 0);
  CHECK(revoked.revoked_at == h.clock.now());
  CHECK_THROWS_MATCHES(h.repo.claim(p.id, p.client_token), Forbidden,
                       MessageContains("does not match a live token of population 'p'"));
  CHECK_THROWS_AS(h.repo.select_rows(p.id, p.client_token, 0, kSelectBody, "application/json"),
                  Forbidden);
  // A lease handed out before the revocation still reports.
  CHECK(h.upload(first_lease, train_result({1}, 0.5f, 0.1f, 4)).status == 201);
  CHECK(std::holds_alternative<TaskAssignment>(h.repo.claim(p.id, issued.client_token)));

  const std::vector<ClientTokenRecord> tokens = h.repo.client_tokens(p.id);
  REQUIRE(tokens.size() == 2);
  CHECK(tokens[0].revoked_at > 0);
  CHECK(tokens[1].revoked_at == 0);
  CHECK(tokens[1].token_hash == hash_token(issued.client_token));
}

TEST_CASE("token_revocations_that_break_a_rule_change_nothing", "[repository][tokens]") {
  RepositoryHarness h;
  const CreatedPopulation p = h.repo.create_population(test_spec("p", 2, 3, 1));
  h.repo.revoke_client_token(p.id, 0);

  CHECK_THROWS_MATCHES(h.repo.revoke_client_token(p.id, 0), Conflict,
                       MessageContains("client token 0 of population 'p' is revoked already"));
  CHECK_THROWS_MATCHES(h.repo.revoke_client_token(p.id, 5), NotFound,
                       MessageContains("population 'p' has no client token 5"));
  CHECK_THROWS_AS(h.repo.revoke_client_token("nope", 0), NotFound);
  CHECK_THROWS_AS(h.repo.issue_client_token("nope"), NotFound);
  CHECK_THROWS_AS(h.repo.client_tokens("nope"), NotFound);
  CHECK(h.repo.client_tokens(p.id).size() == 1);
}

TEST_CASE("client_tokens_hold_across_a_restart", "[repository][tokens]") {
  SqliteFileBackend backend;
  FakeClock clock;
  ServerMetrics metrics;
  CreatedPopulation p;
  IssuedToken issued;
  {
    auto store = backend.open();
    TaskRepository repo(*store, clock, metrics, {});
    p = repo.create_population(test_spec("p", 2, 3, 1));
    issued = repo.issue_client_token(p.id);
    repo.revoke_client_token(p.id, 0);
  }
  auto store = backend.open();
  TaskRepository repo(*store, clock, metrics, {});

  CHECK_THROWS_AS(repo.claim(p.id, p.client_token), Forbidden);
  CHECK(std::holds_alternative<TaskAssignment>(repo.claim(p.id, issued.client_token)));
  CHECK(repo.issue_client_token(p.id).id == 2);
}

// B has the population loaded and leases from its loaded round without re-reading it: the claim
// statement itself refuses the revoked token, and B's re-read then answers 403.
TEST_CASE("a_token_revoked_on_one_server_is_forbidden_on_another_sharing_its_store",
          "[repository][tokens][postgres]") {
  PostgresBackend backend;
  std::unique_ptr<Store> store_a = backend.open();
  if (!store_a) return;
  std::unique_ptr<Store> store_b = backend.open();
  FakeClock clock;
  ServerMetrics metrics_a;
  ServerMetrics metrics_b;
  TaskRepository a(*store_a, clock, metrics_a, {});
  const CreatedPopulation p = a.create_population(test_spec("p", 2, 6, 1));
  TaskRepository b(*store_b, clock, metrics_b, {});
  REQUIRE(std::holds_alternative<TaskAssignment>(b.claim(p.id, p.client_token)));
  b.commit_batch();

  const IssuedToken issued = a.issue_client_token(p.id);
  a.revoke_client_token(p.id, 0);

  CHECK_THROWS_AS(b.claim(p.id, p.client_token), Forbidden);
  CHECK(std::holds_alternative<TaskAssignment>(b.claim(p.id, issued.client_token)));
  b.commit_batch();
  CHECK_THROWS_AS(b.select_rows(p.id, p.client_token, 0, kSelectBody, "application/json"),
                  Forbidden);
}

}  // namespace fedleaf::server
