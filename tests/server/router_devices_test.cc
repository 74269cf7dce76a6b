// Router: a private population's devices over HTTP — POST .../devices (client token: 201, the
// credential once, no-store; 409 without privacy; 429 past the hourly limit with Retry-After),
// GET .../devices (admin; no credential, no hash), POST .../devices/{id}:revoke (admin; 200,
// then 409); claims: 401 "device_required" without Fedleaf-Device, 403 forged or revoked, 429
// "min_separation" with retry_round, 403 "max_participations" — each leaving the task counts.
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

const std::string kAdmin = "admin-token-for-device-tests";

constexpr const char* kPrivacy =
    R"({"mechanism":"dp_ftrl_tree","noise_multiplier":1.0,"clip_norm":1.0,"delta":1e-05,)"
    R"("max_epsilon":1000,"max_participations":1,"min_separation":1,)"
    R"("enrollments_per_token_per_hour":2})";

Request request(std::string method, std::string target, std::string token = "",
                std::string device = "") {
  Request r;
  r.method = std::move(method);
  r.target = std::move(target);
  r.headers["fedleaf-version"] =
      std::to_string(kVersionMajor) + "." + std::to_string(kVersionMinor);
  if (!token.empty()) r.headers["authorization"] = "Bearer " + token;
  if (!device.empty()) r.headers["fedleaf-device"] = device;
  return r;
}

PopulationSpec private_spec() {
  PopulationSpec spec = test::test_spec("p", 4, 2, 2);
  spec.settings.privacy_json = kPrivacy;
  return spec;
}

struct Harness {
  SqliteStore store{":memory:"};
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo{store, clock, metrics, TaskRepositoryOptions{}};
  Router router{repo, metrics, RouterOptions{hash_token(kAdmin), "", nullptr, {}, {}}};
  CreatedPopulation p = repo.create_population(private_spec());

  Response enroll(const std::string& token) {
    return router.handle(request("POST", "/v1/populations/p/devices", token));
  }
  Response claim(const std::string& device) {
    return router.handle(request("POST", "/v1/populations/p/tasks:claim", p.client_token, device));
  }
  int train_tasks() { return store.find_round("p", 0)->train_tasks; }
};

nlohmann::json body_of(const Response& r) { return nlohmann::json::parse(*r.body); }

}  // namespace

TEST_CASE("router_enrolls_a_device_and_lists_it_without_its_secret", "[router][devices]") {
  Harness h;
  const Response enrolled = h.enroll(h.p.client_token);
  REQUIRE(enrolled.status == 201);
  CHECK(enrolled.header("cache-control") == "no-store");
  // Enrollments share the group commit; the credential is sent only once it is durable.
  CHECK(enrolled.send_after == SendAfter::kSync);
  const nlohmann::json device = body_of(enrolled);
  const std::string credential = device["credential"];
  const std::string id = device["device_id"];

  CHECK(h.router.handle(request("GET", "/v1/populations/p/devices", h.p.client_token)).status ==
        403);
  const Response listed = h.router.handle(request("GET", "/v1/populations/p/devices", kAdmin));
  REQUIRE(listed.status == 200);
  CHECK(listed.body->find(credential) == std::string::npos);
  CHECK(listed.body->find(hash_token(credential)) == std::string::npos);
  const nlohmann::json list = body_of(listed);
  REQUIRE(list["devices"].size() == 1);
  CHECK(list["devices"][0]["id"] == id);
  CHECK(list["devices"][0]["participations"] == 0);
  CHECK(list["devices"][0]["last_round"].is_null());
  CHECK(list["devices"][0]["revoked"] == false);
  CHECK(list["next_after"].is_null());

  REQUIRE(h.claim(credential).status == 200);
  CHECK(body_of(h.router.handle(request("GET", "/v1/populations/p/devices",
                                        kAdmin)))["devices"][0]["participations"] == 1);
}

TEST_CASE("router_device_refusals_name_the_rule_and_change_nothing", "[router][devices]") {
  Harness h;
  const std::string credential = body_of(h.enroll(h.p.client_token))["credential"];

  const Response missing = h.claim("");
  CHECK(missing.status == 401);
  CHECK(body_of(missing)["error"]["code"] == "device_required");
  CHECK(h.claim("forged").status == 403);
  CHECK(h.train_tasks() == 0);

  REQUIRE(h.claim(credential).status == 200);
  // max_participations 1: the device is done.
  const Response used = h.claim(credential);
  CHECK(used.status == 403);
  CHECK(body_of(used)["error"]["code"] == "max_participations");
  CHECK(h.train_tasks() == 1);

  const std::string id = body_of(
      h.router.handle(request("GET", "/v1/populations/p/devices", kAdmin)))["devices"][0]["id"];
  const std::string revoke = "/v1/populations/p/devices/" + id + ":revoke";
  CHECK(h.router.handle(request("POST", revoke, h.p.client_token)).status == 403);
  CHECK(h.router.handle(request("POST", revoke, kAdmin)).status == 200);
  CHECK(h.router.handle(request("POST", revoke, kAdmin)).status == 409);
  CHECK(h.router.handle(request("POST", "/v1/populations/p/devices/x:revoke", kAdmin)).status ==
        404);
  CHECK(h.router.handle(request("POST", "/v1/populations/p/devices/00:revoke", kAdmin)).status ==
        404);
  CHECK(h.claim(credential).status == 403);
  CHECK(h.train_tasks() == 1);
}

TEST_CASE("router_a_device_too_soon_gets_429_with_the_round_to_return_at", "[router][devices]") {
  Harness h;
  PopulationSpec spec = private_spec();
  spec.id = "q";
  spec.settings.privacy_json =
      R"({"mechanism":"dp_ftrl_tree","noise_multiplier":1.0,"clip_norm":1.0,"delta":1e-05,)"
      R"("max_epsilon":1000,"max_participations":3,"min_separation":1,)"
      R"("enrollments_per_token_per_hour":2})";
  spec.settings.clients_per_round = 1;
  spec.settings.min_reports = 1;
  spec.settings.train_tasks_per_round = 1;
  const CreatedPopulation q = h.repo.create_population(spec);
  const std::string credential = body_of(
      h.router.handle(request("POST", "/v1/populations/q/devices", q.client_token)))["credential"];
  const Response task =
      h.router.handle(request("POST", "/v1/populations/q/tasks:claim", q.client_token, credential));
  REQUIRE(task.status == 200);
  const Response again =
      h.router.handle(request("POST", "/v1/populations/q/tasks:claim", q.client_token, credential));
  CHECK(again.status == 429);
  CHECK(body_of(again)["error"]["code"] == "min_separation");
  CHECK(body_of(again)["error"]["retry_round"] == 2);
  CHECK(again.header("retry-after") == "100");  // the round's deadline
  CHECK(h.store.find_round("q", 0)->train_tasks == 1);
}

TEST_CASE("router_enrollment_flood_and_public_populations", "[router][devices]") {
  Harness h;
  REQUIRE(h.enroll(h.p.client_token).status == 201);
  REQUIRE(h.enroll(h.p.client_token).status == 201);
  const Response flood = h.enroll(h.p.client_token);
  CHECK(flood.status == 429);
  CHECK(body_of(flood)["error"]["message"].get<std::string>().find(
            "enrollments_per_token_per_hour") == 0);
  CHECK(flood.header("retry-after") == "3600");
  CHECK(body_of(h.router.handle(request("GET", "/v1/populations/p/devices", kAdmin)))["devices"]
            .size() == 2);
  CHECK(h.enroll("not-a-token").status == 403);
  CHECK(h.enroll("").status == 401);

  const CreatedPopulation open = h.repo.create_population(test::test_spec("open", 2, 1, 1));
  const Response refused =
      h.router.handle(request("POST", "/v1/populations/open/devices", open.client_token));
  CHECK(refused.status == 409);
  CHECK(body_of(refused)["error"]["message"].get<std::string>().find("no privacy section") !=
        std::string::npos);
}

}  // namespace fedleaf::server
