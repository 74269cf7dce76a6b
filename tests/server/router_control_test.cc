// Router: POST /v1/populations/{p}:pause, :resume and :finish (admin token): routing (404 for
// another action, 405 for another method), auth (401/403) before the repository is asked, 404
// for an unknown population, 409 naming the rule for a bad transition, the status after a good
// one, and a paused population's claim (204, Retry-After, Fedleaf-Population-State: paused).
// Client tokens: POST .../tokens (201, the token once, no-store), GET .../tokens (no token, no
// hash), POST .../tokens/{id}:revoke (200, then 409), a revoked token's claim 403.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "core/version.h"
#include "server/api/router.h"
#include "server/store/sqlite_store.h"
#include "server/util/tokens.h"
#include "tests/server/server_fixtures.h"

namespace fedleaf::server {
namespace {

const std::string kAdmin = "admin-token-for-control-tests";

Request request(std::string method, std::string target, std::string token = "",
                std::string body = "") {
  Request r;
  r.method = std::move(method);
  r.target = std::move(target);
  r.headers["fedleaf-version"] =
      std::to_string(kVersionMajor) + "." + std::to_string(kVersionMinor);
  if (!token.empty()) r.headers["authorization"] = "Bearer " + token;
  r.body = std::move(body);
  return r;
}

struct Harness {
  SqliteStore store{":memory:"};
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo{store, clock, metrics, TaskRepositoryOptions{}};
  Router router{repo, metrics, RouterOptions{hash_token(kAdmin), "", nullptr, {}, {}}};
  CreatedPopulation p = repo.create_population(test::test_spec("p", 2, 1, 1));

  Response post(const std::string& target, const std::string& token = kAdmin,
                const std::string& body = "") {
    return router.handle(request("POST", target, token, body));
  }
  std::string state() {
    Response r = router.handle(request("GET", "/v1/populations/p"));
    return nlohmann::json::parse(*r.body)["state"];
  }
};

nlohmann::json error_of(const Response& r) { return nlohmann::json::parse(*r.body)["error"]; }

}  // namespace

TEST_CASE("router_pause_answers_the_status_and_a_paused_claim_says_paused", "[router][control]") {
  Harness h;

  Response paused = h.post("/v1/populations/p:pause");

  REQUIRE(paused.status == 200);
  CHECK(nlohmann::json::parse(*paused.body)["state"] == "paused");
  Response claim = h.post("/v1/populations/p/tasks:claim", h.p.client_token, R"({"wait_s": 5})");
  CHECK(claim.status == 204);
  CHECK(claim.header("fedleaf-population-state") == "paused");
  CHECK(claim.header("retry-after") == "10");
  CHECK_FALSE(claim.wait);  // answered at once, not parked

  Response resumed = h.post("/v1/populations/p:resume");
  REQUIRE(resumed.status == 200);
  CHECK(nlohmann::json::parse(*resumed.body)["state"] == "running");
  CHECK(h.post("/v1/populations/p/tasks:claim", h.p.client_token).status == 200);
}

TEST_CASE("router_finish_keeps_the_reason_and_refuses_a_bad_body", "[router][control]") {
  Harness h;

  CHECK(h.post("/v1/populations/p:finish", kAdmin, R"({"why": "x"})").status == 400);
  CHECK(h.post("/v1/populations/p:finish", kAdmin, "[1]").status == 400);
  CHECK(h.state() == "running");
  Response finished = h.post("/v1/populations/p:finish", kAdmin, R"({"reason": "plan was wrong"})");

  REQUIRE(finished.status == 200);
  const nlohmann::json status = nlohmann::json::parse(*finished.body);
  CHECK(status["state"] == "finished");
  CHECK(status["finish_reason"] == "plan was wrong");
  Response claim = h.post("/v1/populations/p/tasks:claim", h.p.client_token);
  CHECK(claim.status == 204);
  CHECK(claim.header("fedleaf-population-state") == "finished");
}

TEST_CASE("router_control_checks_the_admin_token_route_and_state", "[router][control]") {
  Harness h;

  CHECK(h.post("/v1/populations/p:pause", "").status == 401);
  CHECK(h.post("/v1/populations/p:pause", h.p.client_token).status == 403);
  CHECK(h.state() == "running");
  CHECK(h.post("/v1/populations/p:stop").status == 404);
  CHECK(h.router.handle(request("GET", "/v1/populations/p:pause", kAdmin)).status == 405);
  Response unknown = h.post("/v1/populations/nope:pause");
  CHECK(unknown.status == 404);
  CHECK(error_of(unknown)["message"].get<std::string>().find("'nope'") != std::string::npos);

  Response conflict = h.post("/v1/populations/p:resume");
  CHECK(conflict.status == 409);
  CHECK(error_of(conflict)["message"] ==
        "population 'p' is running, not paused: only a paused population can be resumed");
  CHECK(h.state() == "running");
}

TEST_CASE("router_issues_lists_and_revokes_client_tokens", "[router][tokens]") {
  Harness h;

  Response issued = h.post("/v1/populations/p/tokens");

  REQUIRE(issued.status == 201);
  CHECK(issued.header("cache-control") == "no-store");
  const nlohmann::json token = nlohmann::json::parse(*issued.body);
  CHECK(token["id"] == 1);
  CHECK(token["population"] == "p");
  const std::string issued_token = token["client_token"];
  CHECK(h.post("/v1/populations/p/tasks:claim", issued_token).status == 200);

  Response revoked = h.post("/v1/populations/p/tokens/0:revoke");
  REQUIRE(revoked.status == 200);
  CHECK(nlohmann::json::parse(*revoked.body)["id"] == 0);
  CHECK(nlohmann::json::parse(*revoked.body)["revoked_at"].is_number());
  CHECK(h.post("/v1/populations/p/tasks:claim", h.p.client_token).status == 403);
  Response again = h.post("/v1/populations/p/tokens/0:revoke");
  CHECK(again.status == 409);
  CHECK(error_of(again)["message"] == "client token 0 of population 'p' is revoked already");

  Response listed = h.router.handle(request("GET", "/v1/populations/p/tokens", kAdmin));
  REQUIRE(listed.status == 200);
  const nlohmann::json tokens = nlohmann::json::parse(*listed.body)["tokens"];
  REQUIRE(tokens.size() == 2);
  CHECK(tokens[0]["revoked_at"].is_number());
  CHECK(tokens[1]["revoked_at"].is_null());
  CHECK(listed.body->find(issued_token) == std::string::npos);
  CHECK(listed.body->find(hash_token(issued_token)) == std::string::npos);
}

TEST_CASE("router_client_token_calls_check_the_admin_token_and_route", "[router][tokens]") {
  Harness h;

  CHECK(h.post("/v1/populations/p/tokens", "").status == 401);
  CHECK(h.post("/v1/populations/p/tokens", h.p.client_token).status == 403);
  CHECK(h.router.handle(request("GET", "/v1/populations/p/tokens", h.p.client_token)).status ==
        403);
  CHECK(h.post("/v1/populations/p/tokens/0:revoke", h.p.client_token).status == 403);
  CHECK(h.post("/v1/populations/p/tokens/x:revoke").status == 404);
  CHECK(h.post("/v1/populations/p/tokens/01:revoke").status == 404);
  CHECK(h.post("/v1/populations/p/tokens/0:delete").status == 404);
  CHECK(h.post("/v1/populations/p/tokens/0").status == 404);
  CHECK(h.router.handle(request("GET", "/v1/populations/p/tokens/0:revoke", kAdmin)).status == 405);
  CHECK(h.router.handle(request("PUT", "/v1/populations/p/tokens", kAdmin)).status == 405);
  CHECK(h.post("/v1/populations/nope/tokens").status == 404);
  CHECK(h.post("/v1/populations/p/tokens/9:revoke").status == 404);
  CHECK(h.post("/v1/populations/p/tasks:claim", h.p.client_token).status == 200);
}

}  // namespace fedleaf::server
