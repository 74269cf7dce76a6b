// Router: version check before auth and routing, auth (401/403), status codes, headers.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "core/version.h"
#include "core/wire/safetensors.h"
#include "server/api/router.h"

#include "server/api/claim_body.h"
#include "server/repository/group_commit.h"
#include "server/store/sqlite_store.h"
#include "server/util/server_errors.h"
#include "server/util/sha256.h"
#include "server/util/tokens.h"
#include "tests/server/server_fixtures.h"

namespace fedleaf::server {
namespace {

const std::string kAdmin = "admin-token-for-tests";

std::string version_header() {
  return std::to_string(kVersionMajor) + "." + std::to_string(kVersionMinor);
}

Request request(std::string method, std::string target, std::string token = "",
                std::string body = "") {
  Request r;
  r.method = std::move(method);
  r.target = std::move(target);
  r.headers["fedleaf-version"] = version_header();
  if (!token.empty()) r.headers["authorization"] = "Bearer " + token;
  r.body = std::move(body);
  return r;
}

std::string create_body(const std::string& id, int clients_per_round) {
  nlohmann::json body = {{"id", id},
                         {"plan", nlohmann::json::parse(test::kTestPlan)},
                         {"initial_model_b64", ""},
                         {"rounds", 2},
                         {"clients_per_round", clients_per_round}};
  // Base64 of the model, encoded here so the router test does not depend on base64.h.
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::string model = test::test_model_bytes();
  std::string b64;
  for (std::size_t i = 0; i < model.size(); i += 3) {
    unsigned v = static_cast<unsigned char>(model[i]) << 16;
    if (i + 1 < model.size()) v |= static_cast<unsigned char>(model[i + 1]) << 8;
    if (i + 2 < model.size()) v |= static_cast<unsigned char>(model[i + 2]);
    b64 += alphabet[(v >> 18) & 63];
    b64 += alphabet[(v >> 12) & 63];
    b64 += i + 1 < model.size() ? alphabet[(v >> 6) & 63] : '=';
    b64 += i + 2 < model.size() ? alphabet[v & 63] : '=';
  }
  body["initial_model_b64"] = b64;
  return body.dump();
}

struct RouterHarness {
  SqliteStore store{":memory:"};
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo{store, clock, metrics, TaskRepositoryOptions{}};
  Router router{repo, metrics, RouterOptions{hash_token(kAdmin), "", nullptr, {}, {}}};

  // Creates population `id` through the API and returns its client token.
  std::string create(const std::string& id, int clients_per_round = 1) {
    Response r = router.handle(
        request("POST", "/v1/populations", kAdmin, create_body(id, clients_per_round)));
    REQUIRE(r.status == 201);
    return nlohmann::json::parse(*r.body)["client_token"];
  }
};

nlohmann::json error_of(const Response& r) { return nlohmann::json::parse(*r.body)["error"]; }

}  // namespace

TEST_CASE("router_answers_426_for_another_major_before_auth_and_routing", "[router]") {
  RouterHarness h;
  Request r = request("POST", "/v1/no/such/route");
  r.headers["fedleaf-version"] = std::to_string(kVersionMajor + 1) + ".0";

  Response res = h.router.handle(r);

  CHECK(res.status == 426);
  CHECK(error_of(res)["code"] == "upgrade_required");
  const std::string message = error_of(res)["message"];
  CHECK(message.find(std::to_string(kVersionMajor + 1) + ".0") != std::string::npos);
  CHECK(message.find(version_header()) != std::string::npos);
}

TEST_CASE("router_requires_the_version_header_on_state_changes_only", "[router]") {
  RouterHarness h;
  h.create("p");
  Request claim = request("POST", "/v1/populations/p/tasks:claim", "x");
  claim.headers.erase("fedleaf-version");
  Request status = request("GET", "/v1/populations/p");
  status.headers.erase("fedleaf-version");
  Request other_minor = request("GET", "/v1/populations/p");
  other_minor.headers["fedleaf-version"] = std::to_string(kVersionMajor) + ".99";
  Request garbage = request("GET", "/v1/populations/p");
  garbage.headers["fedleaf-version"] = "latest";

  CHECK(h.router.handle(claim).status == 426);
  CHECK(h.router.handle(status).status == 200);
  CHECK(h.router.handle(other_minor).status == 200);
  CHECK(h.router.handle(garbage).status == 426);
}

TEST_CASE("router_admin_calls_need_the_admin_token", "[router]") {
  RouterHarness h;

  CHECK(h.router.handle(request("GET", "/v1/populations")).status == 401);
  CHECK(h.router.handle(request("GET", "/v1/populations", "wrong-token")).status == 403);
  Request basic = request("GET", "/v1/populations");
  basic.headers["authorization"] = "Basic " + kAdmin;
  CHECK(h.router.handle(basic).status == 401);
  Response ok = h.router.handle(request("GET", "/v1/populations", kAdmin));
  CHECK(ok.status == 200);
  CHECK(nlohmann::json::parse(*ok.body)["populations"].empty());
}

TEST_CASE("router_create_population_answers_201_with_location_and_409_on_repeat", "[router]") {
  RouterHarness h;
  Response created =
      h.router.handle(request("POST", "/v1/populations", kAdmin, create_body("p", 1)));
  Response again = h.router.handle(request("POST", "/v1/populations", kAdmin, create_body("p", 1)));
  Response bad = h.router.handle(request("POST", "/v1/populations", kAdmin, "{\"plan\": 3}"));

  CHECK(created.status == 201);
  CHECK(created.header("location") == "/v1/populations/p");
  CHECK(nlohmann::json::parse(*created.body)["model_url"] == "/v1/populations/p/rounds/0/model");
  CHECK(again.status == 409);
  CHECK(bad.status == 400);
  CHECK(error_of(bad)["message"].get<std::string>().find("plan") != std::string::npos);
}

TEST_CASE("router_claim_gives_task_json_then_204_with_retry_after", "[router]") {
  RouterHarness h;
  const std::string token = h.create("p");

  Response task = h.router.handle(request("POST", "/v1/populations/p/tasks:claim", token));
  Response none = h.router.handle(request("POST", "/v1/populations/p/tasks:claim", token));

  REQUIRE(task.status == 200);
  const auto body = nlohmann::json::parse(*task.body);
  for (const char* key : {"task_id", "population", "round", "kind", "lease_token",
                          "lease_expires_at", "plan", "model_url", "model_etag", "upload_url"}) {
    CHECK(body.contains(key));
  }
  CHECK(body["upload_url"] ==
        "/v1/tasks/" + std::to_string(body["task_id"].get<int>()) + "/result");
  CHECK(none.status == 204);
  CHECK(none.body->empty());
  CHECK(std::stoi(none.header("retry-after")) >= 1);
  CHECK(none.header("fedleaf-population-state") == "running");
  CHECK(std::stoi(none.header("fedleaf-retry-after-ms")) >= 50);
}

TEST_CASE("router_claim_reads_min_round_and_rejects_a_malformed_body", "[router]") {
  RouterHarness h;
  const std::string token = h.create("p");

  Response later = h.router.handle(
      request("POST", "/v1/populations/p/tasks:claim", token, R"({"min_round": 1})"));
  Response bad = h.router.handle(
      request("POST", "/v1/populations/p/tasks:claim", token, R"({"min_round": -1})"));
  Response garbage = h.router.handle(request("POST", "/v1/populations/p/tasks:claim", token, "{"));
  Response now = h.router.handle(
      request("POST", "/v1/populations/p/tasks:claim", token, R"({"min_round": 0})"));

  CHECK(later.status == 204);
  CHECK(bad.status == 400);
  CHECK(nlohmann::json::parse(*bad.body)["error"]["message"] ==
        "claim body: min_round must be an integer in [0, 1000000000]");
  CHECK(garbage.status == 400);
  CHECK(now.status == 200);
}

TEST_CASE("router_claim_auth_failures_are_401_and_403", "[router]") {
  RouterHarness h;
  h.create("p");

  CHECK(h.router.handle(request("POST", "/v1/populations/p/tasks:claim")).status == 401);
  CHECK(h.router.handle(request("POST", "/v1/populations/p/tasks:claim", "nope")).status == 403);
  CHECK(h.router.handle(request("POST", "/v1/populations/q/tasks:claim", "nope")).status == 404);
}

TEST_CASE("router_upload_status_codes_follow_the_protocol", "[router]") {
  RouterHarness h;
  const std::string token = h.create("p", 2);
  const auto task = nlohmann::json::parse(
      *h.router.handle(request("POST", "/v1/populations/p/tasks:claim", token)).body);
  const std::string url = task["upload_url"];
  const std::string lease = task["lease_token"];
  const std::string result = test::train_result({1}, 1, 1, 1);

  CHECK(h.router.handle(request("PUT", url, "", result)).status == 401);
  CHECK(h.router.handle(request("PUT", url, token, result)).status == 403);
  CHECK(h.router.handle(request("PUT", url, lease, "garbage")).status == 400);
  CHECK(h.router.handle(request("PUT", url, lease, result)).status == 201);
  CHECK(h.router.handle(request("PUT", url, lease, result)).status == 200);
  CHECK(h.router.handle(request("PUT", url, lease, test::train_result({2}, 1, 1, 1))).status ==
        409);
  CHECK(h.router.handle(request("POST", url, lease, result)).status == 405);
  CHECK(h.router.handle(request("PUT", "/v1/tasks/999/result", lease, result)).status == 404);
  CHECK(h.router.handle(request("PUT", "/v1/tasks/abc/result", lease, result)).status == 404);
}

TEST_CASE("router_marks_a_waiting_claim_that_found_nothing_to_be_parked", "[router]") {
  RouterHarness h;
  const std::string token = h.create("p");
  const std::string claim_url = "/v1/populations/p/tasks:claim";
  Response task = h.router.handle(request("POST", claim_url, token, R"({"wait_s": 20})"));
  Response polled = h.router.handle(request("POST", claim_url, token));
  Response waiting = h.router.handle(request("POST", claim_url, token, R"({"wait_s": 99})"));
  Response bad = h.router.handle(request("POST", claim_url, token, R"({"wait_s": -1})"));

  CHECK(task.status == 200);
  CHECK_FALSE(task.wait);
  CHECK(polled.status == 204);
  CHECK_FALSE(polled.wait);
  REQUIRE(waiting.wait);
  CHECK(waiting.status == 204);
  CHECK(waiting.send_after == SendAfter::kCommit);
  CHECK(waiting.wait->population == "p");
  CHECK(waiting.wait->epoch == h.repo.waiters().epoch("p"));
  CHECK(waiting.wait->wait_s == kMaxClaimWaitS);
  CHECK(bad.status == 400);
}

TEST_CASE("router_marks_claims_to_wait_for_the_commit_and_uploads_and_reads_for_the_sync",
          "[router]") {
  RouterHarness h;
  const std::string token = h.create("p");
  Response claim = h.router.handle(request("POST", "/v1/populations/p/tasks:claim", token));
  Response retry = h.router.handle(request("POST", "/v1/populations/p/tasks:claim", token));
  Response forbidden = h.router.handle(request("POST", "/v1/populations/p/tasks:claim", "no"));
  const auto task = nlohmann::json::parse(*claim.body);
  const std::string url = task["upload_url"];
  const std::string lease = task["lease_token"];

  Response accepted = h.router.handle(request("PUT", url, lease, test::train_result({1}, 1, 1, 1)));
  Response repeated = h.router.handle(request("PUT", url, lease, test::train_result({1}, 1, 1, 1)));
  Response invalid = h.router.handle(request("PUT", url, lease, "garbage"));
  Response status = h.router.handle(request("GET", "/v1/populations/p"));
  Response model = h.router.handle(request("GET", "/v1/populations/p/rounds/0/model"));
  Response created =
      h.router.handle(request("POST", "/v1/populations", kAdmin, create_body("q", 1)));
  Response listed = h.router.handle(request("GET", "/v1/populations", kAdmin));
  Response health = h.router.handle(request("GET", "/healthz"));

  CHECK(claim.send_after == SendAfter::kCommit);
  CHECK(retry.send_after == SendAfter::kCommit);
  CHECK(forbidden.send_after == SendAfter::kCommit);
  CHECK(accepted.status == 201);
  CHECK(accepted.send_after == SendAfter::kSync);
  CHECK(repeated.status == 200);
  CHECK(repeated.send_after == SendAfter::kSync);
  CHECK(invalid.send_after == SendAfter::kSync);
  CHECK(status.send_after == SendAfter::kSync);
  CHECK(model.send_after == SendAfter::kSync);
  CHECK(created.send_after == SendAfter::kNothing);
  CHECK(listed.send_after == SendAfter::kNothing);
  CHECK(health.send_after == SendAfter::kNothing);
}

TEST_CASE("router_model_download_is_immutable_with_etag_and_304", "[router]") {
  RouterHarness h;
  h.create("p");

  Response model = h.router.handle(request("GET", "/v1/populations/p/rounds/0/model"));
  Request conditional = request("GET", "/v1/populations/p/rounds/0/model");
  conditional.headers["if-none-match"] = model.header("etag");
  Response not_modified = h.router.handle(conditional);
  Response future = h.router.handle(request("GET", "/v1/populations/p/rounds/1/model"));

  CHECK(model.status == 200);
  CHECK(*model.body == test::test_model_bytes());
  CHECK(model.header("etag") == "\"" + sha256_hex(test::test_model_bytes()) + "\"");
  CHECK(model.header("cache-control") == "public, max-age=31536000, immutable");
  CHECK(not_modified.status == 304);
  CHECK(not_modified.body->empty());
  CHECK(not_modified.header("etag") == model.header("etag"));
  CHECK(future.status == 404);
}

TEST_CASE("router_status_healthz_metrics_and_unknown_paths", "[router]") {
  RouterHarness h;
  h.create("p");
  h.router.handle(request("POST", "/v1/populations/p/tasks:claim", "nope"));

  Response status = h.router.handle(request("GET", "/v1/populations/p"));
  Response health = h.router.handle(request("GET", "/healthz"));
  Response metrics = h.router.handle(request("GET", "/metrics"));
  Response unknown = h.router.handle(request("GET", "/v1/whatever"));
  Response no_static = h.router.handle(request("GET", "/index.html"));

  CHECK(status.status == 200);
  CHECK(nlohmann::json::parse(*status.body)["state"] == "running");
  CHECK(health.status == 200);
  CHECK(metrics.status == 200);
  CHECK(metrics.header("content-type").find("text/plain") == 0);
  CHECK(metrics.body->find("fedleaf_claims_total{outcome=\"error\"} 1") != std::string::npos);
  CHECK(metrics.body->find("fedleaf_open_leases 0") != std::string::npos);
  CHECK(metrics.body->find("fedleaf_waiting_claims 0") != std::string::npos);
  CHECK(unknown.status == 404);
  CHECK(error_of(unknown)["code"] == "not_found");
  CHECK(no_static.status == 404);
}

// Wired as main.cc wires them: once a group commit fails, a balancer must see the server down.
TEST_CASE("router_healthz_is_503_naming_the_failure_after_a_failed_group_commit", "[router]") {
  SqliteStore store{":memory:"};
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo{store, clock, metrics, TaskRepositoryOptions{}};
  GroupCommit group([] { throw std::runtime_error("database or disk is full"); }, [] {}, metrics,
                    nullptr);
  Router router{repo, metrics, RouterOptions{hash_token(kAdmin), "", nullptr, {}, [&group] {
                                               return group.failure();
                                             }}};
  Response healthy = router.handle(request("GET", "/healthz"));
  std::promise<bool> released;

  group.after_durable([&](bool ok) { released.set_value(ok); });
  REQUIRE_FALSE(released.get_future().get());
  Response failed = router.handle(request("GET", "/healthz"));
  Response head = router.handle(request("HEAD", "/healthz"));

  CHECK(healthy.status == 200);
  CHECK(nlohmann::json::parse(*healthy.body)["status"] == "ok");
  CHECK(failed.status == 503);
  CHECK(failed.send_after == SendAfter::kNothing);
  const auto body = nlohmann::json::parse(*failed.body);
  CHECK(body["status"] == "failed");
  CHECK(body["version"] == kVersion);
  CHECK(body["failure"] == "commit failed: database or disk is full");
  CHECK(head.status == 503);
}

TEST_CASE("router_model_select_answers_rows_uncached_and_logs_no_ids", "[router]") {
  RouterHarness h;
  const std::string token = h.create("p");
  std::ostringstream log;
  auto logger = std::make_shared<spdlog::logger>(
      "select-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  logger->set_pattern("%v");
  logger->set_level(spdlog::level::debug);
  Router router{h.repo, h.metrics, RouterOptions{hash_token(kAdmin), "", logger, {}, {}}};
  Request select = request("POST", "/v1/populations/p/rounds/0/model:select", token,
                           R"({"tensors": {"emb/weight": [3, 7]}})");
  select.headers["content-type"] = "application/json";
  Request unsorted = select;
  unsorted.body = R"({"tensors": {"emb/weight": [7, 3]}})";

  const Response ok = router.handle(select);
  const Response bad = router.handle(unsorted);

  REQUIRE(ok.status == 200);
  CHECK(ok.header("cache-control") == "no-store");
  CHECK(ok.header("content-type") == "application/octet-stream");
  CHECK(ok.send_after == SendAfter::kSync);
  const core::SafetensorsFile answer = core::read_safetensors(
      reinterpret_cast<const std::uint8_t*>(ok.body->data()), ok.body->size());
  CHECK(std::get<core::RowSparseTensor>(answer.tensors.at("emb/weight")).num_rows() == 2);
  CHECK(bad.status == 400);
  CHECK(error_of(bad)["message"].get<std::string>().find("sorted strictly ascending") !=
        std::string::npos);
  CHECK(std::regex_match(log.str(), std::regex("event=model_select population=p round=0 "
                                               "rows='emb/weight:2' bytes_out=[0-9]+\\n")));
}

}  // namespace fedleaf::server

namespace fedleaf::server {

TEST_CASE("router_answers_429_with_retry_after_to_a_client_token_over_its_rate_only", "[router]") {
  RouterHarness h;
  const std::string noisy = h.create("noisy", 5);
  const std::string quiet = h.create("quiet", 5);
  // A burst of 2 that refills one request per 1000 s: the third call within the test is refused.
  Router limited{h.repo, h.metrics, RouterOptions{hash_token(kAdmin), "", nullptr, {0.001, 2}, {}}};
  const auto claim = [&](const std::string& population, const std::string& token) {
    return limited.handle(request("POST", "/v1/populations/" + population + "/tasks:claim", token));
  };

  CHECK(claim("noisy", noisy).status == 200);
  CHECK(claim("noisy", noisy).status == 200);
  const Response refused = claim("noisy", noisy);

  CHECK(refused.status == 429);
  CHECK(refused.body->find("over its rate limit") != std::string::npos);
  CHECK(std::stoll(refused.header("retry-after")) >= 1);
  CHECK(std::stoll(refused.header("fedleaf-retry-after-ms")) > 0);
  CHECK(claim("quiet", quiet).status == 200);  // another token is not affected
  const Response select = limited.handle(
      request("POST", "/v1/populations/noisy/rounds/0/model:select", noisy, R"({"tensors": {}})"));
  CHECK(select.status == 429);  // model:select counts against the same token
}

// Regression: the transport handles a woken claim again, and the router charged it to the rate
// limit a second time: admitted waiting claims got 429 the moment their round opened.
// An upload's bytes are moved into the repository (and on into the store), never copied; a claim
// is left whole, since a parked one is handled again from the same request.
TEST_CASE("router_moves_an_uploads_body_out_of_the_request_and_leaves_a_claim_whole", "[router]") {
  RouterHarness h;
  const std::string token = h.create("p", 2);
  Request claim = request("POST", "/v1/populations/p/tasks:claim", token, R"({"wait_s": 0})");
  const auto task = nlohmann::json::parse(*h.router.handle(claim).body);
  const std::string url = task["upload_url"];
  const std::string lease = task["lease_token"];
  Request upload = request("PUT", url, lease, test::train_result({1}, 1, 1, 1));
  Request refused = request("PUT", url, "not-the-lease", "bytes");

  CHECK(h.router.handle(upload).status == 201);
  CHECK(h.router.handle(refused).status == 403);

  CHECK(upload.body.empty());
  CHECK(refused.body.empty());
  CHECK(claim.body == R"({"wait_s": 0})");
}

TEST_CASE("router_does_not_charge_a_woken_claim_to_the_rate_limit_again", "[router]") {
  RouterHarness h;
  const std::string token = h.create("p", 1);
  // A burst of 2 that refills one request per 1000 s: two requests, then 429.
  Router limited{h.repo, h.metrics, RouterOptions{hash_token(kAdmin), "", nullptr, {0.001, 2}, {}}};
  Request claim = request("POST", "/v1/populations/p/tasks:claim", token, R"({"wait_s": 20})");
  const Response first = limited.handle(claim);
  const Response waiting = limited.handle(claim);
  REQUIRE(first.status == 200);
  REQUIRE(waiting.wait);
  const std::string lease = nlohmann::json::parse(*first.body)["lease_token"];
  const std::string upload = nlohmann::json::parse(*first.body)["upload_url"];
  REQUIRE(h.router.handle(request("PUT", upload, lease, test::train_result({1}, 1, 1, 1))).status ==
          201);

  const Response woken = limited.handle_woken(claim);

  CHECK(woken.status == 200);
  CHECK(nlohmann::json::parse(*woken.body)["round"] == 1);
  CHECK(limited.handle(claim).status == 429);  // a new request is still charged
}

// Regression: ids were read with strtoll, so "-0", "+0" and "00" named round 0's model under
// other URLs (and other cache entries).
TEST_CASE("router_answers_404_to_a_round_or_task_id_that_is_not_canonical_decimal", "[router]") {
  RouterHarness h;
  h.create("p");
  CHECK(h.router.handle(request("GET", "/v1/populations/p/rounds/0/model")).status == 200);
  for (const char* round : {"-0", "+0", "00", "0x0", "1e0", "", "9999999999999999999"}) {
    Response model = h.router.handle(
        request("GET", std::string("/v1/populations/p/rounds/") + round + "/model"));
    CHECK(model.status == 404);
    CHECK_THAT(*model.body,
               Catch::Contains("is not a number (decimal digits, no sign or leading zero)"));
  }
  for (const char* task : {"-1", "+1", "01"}) {
    Response upload =
        h.router.handle(request("PUT", std::string("/v1/tasks/") + task + "/result", "t", "x"));
    CHECK(upload.status == 404);
    CHECK_THAT(*upload.body, Catch::Contains("task '"));
  }
}

}  // namespace fedleaf::server
