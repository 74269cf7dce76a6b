#include "server/api/router.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/text/text_format.h"
#include "core/version.h"
#include "server/api/claim_body.h"
#include "server/api/finish_body.h"
#include "server/api/population_body.h"
#include "server/api/protocol_headers.h"
#include "server/api/router_helpers.h"
#include "server/api/static_files.h"
#include "server/api/wire_json.h"
#include "server/util/server_errors.h"
#include "server/util/tokens.h"

namespace fedleaf::server {

namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 1;
  while (start <= path.size()) {
    const std::size_t end = path.find('/', start);
    parts.push_back(path.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return parts;
}

// Ids in paths are canonical decimal numbers: "+7", "-0" and "007" would name the resource of
// "7" or "0" under a second URL (and a second cache entry).
std::int64_t parse_id(const std::string& text, const char* what) {
  const bool digits =
      !text.empty() && text.size() <= 18 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || (text.size() > 1 && text[0] == '0')) {
    throw NotFound(std::string(what) + " " + core::in_quotes(text) +
                   " is not a number (decimal digits, no sign or leading zero)");
  }
  return std::stoll(text);
}

// Whether an If-None-Match header value matches the (unquoted) etag.
bool etag_matches(const std::string& if_none_match, const std::string& etag) {
  if (if_none_match.find('*') != std::string::npos) return true;
  std::size_t pos = 0;
  while ((pos = if_none_match.find('"', pos)) != std::string::npos) {
    const std::size_t end = if_none_match.find('"', pos + 1);
    if (end == std::string::npos) return false;
    if (if_none_match.compare(pos + 1, end - pos - 1, etag) == 0) return true;
    pos = end + 1;
  }
  return false;
}

Response model_response(const Request& request, const ModelBlob& blob) {
  const std::string quoted = "\"" + blob.etag + "\"";
  Response r;
  r.set_header("ETag", quoted);
  r.set_header("Cache-Control", "public, max-age=31536000, immutable");
  if (etag_matches(request.header("if-none-match"), blob.etag)) {
    r.status = 304;
    return r;
  }
  r.set_header("Content-Type", "application/octet-stream");
  r.body = blob.bytes;
  return r;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// GET /v1/populations/{p}, /v1/populations/{p}/rounds/{r}/model and POST .../model:select: they
// may reveal a round closed in the repository's open batch, so they wait for its sync like
// uploads.
bool reads_population(const std::string& path) {
  if (path.rfind("/v1/populations/", 0) != 0) return false;
  const std::size_t slash = path.find('/', 16);
  return slash == std::string::npos || ends_with(path, "/model") ||
         ends_with(path, "/model:select");
}

std::int64_t parse_round(const std::string& text) {
  const std::int64_t round = parse_id(text, "round");
  if (round > 1'000'000'000) throw NotFound("round " + text + " does not exist");
  return round;
}

}  // namespace

std::string bearer(const Request& request) {
  const std::string header = request.header("authorization");
  if (header.empty()) throw Unauthorized("missing 'Authorization: Bearer <token>' header");
  auto token = parse_bearer(header);
  if (!token) throw Unauthorized("the Authorization header must use the Bearer scheme");
  return *token;
}

void require_method(const Request& request, std::initializer_list<const char*> allowed) {
  for (const char* m : allowed) {
    if (request.method == m) return;
  }
  std::string list;
  for (const char* m : allowed) list += (list.empty() ? "" : ", ") + std::string(m);
  throw MethodNotAllowed("method " + request.method + " is not allowed on " + request.path() +
                         " (allowed: " + list + ")");
}

void check_protocol_version(const Request& request) {
  const std::string header = request.header(kFedleafVersion);
  const std::string ours = protocol_version();
  if (header.empty()) {
    if (request.method == "POST" || request.method == "PUT") {
      throw UpgradeRequired("missing Fedleaf-Version header: this server speaks fedleaf " + ours +
                            " and accepts clients of major version " +
                            std::to_string(kVersionMajor));
    }
    return;
  }
  const std::size_t dot = header.find('.');
  bool valid = dot != std::string::npos && dot > 0 && dot + 1 < header.size();
  for (std::size_t i = 0; valid && i < header.size(); ++i) {
    valid = i == dot || (header[i] >= '0' && header[i] <= '9');
  }
  if (!valid || std::atoi(header.substr(0, dot).c_str()) != kVersionMajor || dot > 6) {
    throw UpgradeRequired("client speaks fedleaf " + header + " but this server speaks fedleaf " +
                          ours + " and accepts clients of major version " +
                          std::to_string(kVersionMajor));
  }
}

Router::Router(TaskRepository& repository, ServerMetrics& metrics, RouterOptions options)
    : repository_(repository),
      metrics_(metrics),
      options_(std::move(options)),
      client_limiter_(options_.client_rate_limit) {}

void Router::admit_client(const std::string& token) const {
  if (!client_limiter_.enabled()) return;
  const double now_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (const auto wait_s = client_limiter_.admit(token, now_s)) {
    throw TooManyRequests("this client token is over its rate limit of " +
                              core::format_decimal(options_.client_rate_limit.rate_per_s) +
                              " requests/s (burst " +
                              core::format_decimal(options_.client_rate_limit.burst) +
                              "); retry in " + std::to_string(std::lround(*wait_s * 1000)) + " ms",
                          *wait_s);
  }
}

void Router::check_admin(const Request& request) const {
  if (!token_matches(bearer(request), options_.admin_token_hash)) {
    throw Forbidden("the admin token does not match");
  }
}

Response Router::handle(Request& request) const { return handle(request, false); }

Response Router::handle_woken(Request& request) const { return handle(request, true); }

Response Router::handle(Request& request, bool admitted) const {
  const std::string path = request.path();
  const bool is_upload = path.rfind("/v1/tasks/", 0) == 0;
  const bool is_claim = path.size() > 12 && path.compare(path.size() - 12, 12, "/tasks:claim") == 0;
  Response response;
  try {
    response = route(request, admitted);
  } catch (const std::exception& e) {
    response = error_response(e);
    if (const auto* busy = dynamic_cast<const TooManyRequests*>(&e)) {
      const double wait_s = std::max(0.001, busy->retry_after_s());
      response.set_header("Retry-After", std::to_string(static_cast<long long>(std::ceil(wait_s))));
      response.set_header(kFedleafRetryAfterMs,
                          std::to_string(static_cast<long long>(std::ceil(wait_s * 1000))));
    }
    if (is_claim) metrics_.count_claim("error");
  }
  if (is_upload) {
    metrics_.count_upload(response.status);
    response.send_after = SendAfter::kSync;
  } else if (is_claim) {
    response.send_after = SendAfter::kCommit;
  } else if (reads_population(path)) {
    response.send_after = SendAfter::kSync;
  }
  // A parked claim is not answered yet: the transport counts its final answer.
  if (!response.wait) metrics_.count_request(response.status);
  return response;
}

void Router::release_undelivered(const HandedLease& lease) const {
  try {
    repository_.release_lease(lease.task_id, lease.lease_token);
  } catch (const std::exception& e) {
    if (options_.logger) {
      options_.logger->warn("event=lease_not_released task={} error=\"{}\"", lease.task_id,
                            e.what());
    }
  }
}

// The log names tensors and id counts only: the ids say something about the leaf's data.
Response Router::select_response(const Request& request, const std::string& population,
                                 int round) const {
  const std::string token = bearer(request);
  admit_client(token);
  SelectedRows rows = repository_.select_rows(population, token, round, request.body,
                                              request.header("content-type"));
  if (options_.logger && options_.logger->should_log(spdlog::level::debug)) {
    std::string tensors;
    for (const auto& [name, count] : rows.rows_per_tensor) {
      tensors += (tensors.empty() ? "" : ",") + name + ":" + std::to_string(count);
    }
    options_.logger->debug("event=model_select population={} round={} rows={} bytes_out={}",
                           population, round, core::in_quotes(tensors), rows.bytes.size());
  }
  Response r;
  r.set_header("Content-Type", "application/octet-stream");
  r.set_header("Cache-Control", "no-store");
  r.body = std::make_shared<const std::string>(std::move(rows.bytes));
  return r;
}

// An operator's pause, resume or finish: the population's status after it.
Response Router::control_response(const Request& request, const std::string& target) const {
  const std::size_t colon = target.rfind(':');
  const std::string population = target.substr(0, colon);
  const std::string verb = target.substr(colon + 1);
  if (verb != "pause" && verb != "resume" && verb != "finish") {
    throw NotFound("no such path: " + request.path() + " (a population's actions are :pause, " +
                   ":resume and :finish)");
  }
  require_method(request, {"POST"});
  check_admin(request);
  if (verb == "pause") {
    repository_.pause(population);
  } else if (verb == "resume") {
    repository_.resume(population);
  } else {
    repository_.finish(population, parse_finish_reason(request.body));
  }
  return Response::json(200, status_json(repository_.status(population)).dump());
}

// A population's client tokens: GET lists them, POST issues one; POST {id}:revoke revokes one.
Response Router::tokens_response(const Request& request, const std::string& population,
                                 const std::string* revoke) const {
  if (revoke == nullptr) {
    require_method(request, {"GET", "POST"});
    check_admin(request);
    if (request.method == "GET") {
      return Response::json(200, client_tokens_json(repository_.client_tokens(population)).dump());
    }
    const IssuedToken issued = repository_.issue_client_token(population);
    Response r = Response::json(201, issued_token_json(issued).dump());
    r.set_header("Cache-Control", "no-store");
    return r;
  }
  const std::size_t colon = revoke->rfind(':');
  if (colon == std::string::npos || revoke->compare(colon, std::string::npos, ":revoke") != 0) {
    throw NotFound("no such path: " + request.path() + " (a client token's action is :revoke)");
  }
  const std::int64_t token_id = parse_id(revoke->substr(0, colon), "client token");
  if (token_id > 1'000'000'000)
    throw NotFound("client token " + revoke->substr(0, colon) + " does not exist");
  require_method(request, {"POST"});
  check_admin(request);
  return Response::json(200, client_token_json(repository_.revoke_client_token(
                                                   population, static_cast<int>(token_id)))
                                 .dump());
}

Response Router::route(Request& request, bool admitted) const {
  const std::string path = request.path();
  if (path == "/healthz") {
    require_method(request, {"GET", "HEAD"});
    const std::optional<std::string> failure = options_.failure ? options_.failure() : std::nullopt;
    return Response::json(failure ? 503 : 200, health_json(failure).dump());
  }
  if (path == "/metrics") {
    require_method(request, {"GET", "HEAD"});
    Response r;
    r.set_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    std::vector<ServerMetrics::PopulationEpsilon> privacy;
    for (const PrivacyEpsilon& p : repository_.privacy_epsilons()) {
      privacy.push_back({p.population_id, p.spent, p.planned});
    }
    r.body = std::make_shared<const std::string>(
        metrics_.render(repository_.open_leases(), repository_.waiters().waiting(), privacy));
    return r;
  }
  if (path != "/v1" && path.rfind("/v1/", 0) != 0) {
    if (options_.web_root.empty()) throw NotFound("no such path: " + path);
    require_method(request, {"GET", "HEAD"});
    return serve_static_file(options_.web_root, path);
  }

  check_protocol_version(request);
  const std::vector<std::string> parts = split_path(path);
  const std::size_t n = parts.size();
  // /v1/populations
  if (n == 2 && parts[1] == "populations") {
    require_method(request, {"GET", "POST"});
    check_admin(request);
    if (request.method == "GET") {
      return Response::json(200, populations_json(repository_.list_populations()).dump());
    }
    const CreatedPopulation created =
        repository_.create_population(parse_population_body(request.body));
    return Response::json(201, created_population_json(created).dump())
        .set_header("Location", population_url(created.id));
  }
  // /v1/populations/{p}:pause, :resume, :finish (a population id holds no ':')
  if (n == 3 && parts[1] == "populations" && parts[2].find(':') != std::string::npos) {
    return control_response(request, parts[2]);
  }
  // /v1/populations/{p}
  if (n == 3 && parts[1] == "populations") {
    require_method(request, {"GET", "HEAD"});
    return Response::json(200, status_json(repository_.status(parts[2])).dump());
  }
  // /v1/populations/{p}/tokens, /v1/populations/{p}/tokens/{id}:revoke
  if ((n == 4 || n == 5) && parts[1] == "populations" && parts[3] == "tokens") {
    return tokens_response(request, parts[2], n == 5 ? &parts[4] : nullptr);
  }
  // /v1/populations/{p}/devices, /v1/populations/{p}/devices/{id}:revoke
  if ((n == 4 || n == 5) && parts[1] == "populations" && parts[3] == "devices") {
    if (n == 4 && request.method == "POST") admit_client(bearer(request));
    return devices_response(request, parts[2], n == 5 ? &parts[4] : nullptr);
  }
  // /v1/populations/{p}/tasks:claim
  if (n == 4 && parts[1] == "populations" && parts[3] == "tasks:claim") {
    require_method(request, {"POST"});
    const std::string token = bearer(request);
    if (!admitted) admit_client(token);
    const ClaimBody claim = parse_claim_body(request.body);
    const ClaimOutcome outcome =
        repository_.claim(parts[2], token, claim.min_round, request.header(kFedleafDevice));
    if (const auto* task = std::get_if<TaskAssignment>(&outcome)) {
      Response r = Response::json(200, task_json(*task));
      r.lease = HandedLease{task->task_id, task->lease_token};
      return r;
    }
    const auto& retry = std::get<RetryLater>(outcome);
    Response r;
    r.status = 204;
    r.set_header("Retry-After", std::to_string(static_cast<long long>(retry.retry_after_s)));
    r.set_header(kFedleafRetryAfterMs,
                 std::to_string(static_cast<long long>(retry.retry_after_ms)));
    r.set_header(kFedleafPopulationState, retry.finished ? "finished"
                                          : retry.paused ? "paused"
                                                         : "running");
    // A paused population's claim is answered at once: a resume is seen at the next poll.
    if (claim.wait_s > 0 && !retry.finished && !retry.paused) {
      r.wait = ClaimWait{parts[2], retry.wake_epoch, claim.wait_s};
    }
    return r;
  }
  // /v1/populations/{p}/rounds/{r}/model
  if (n == 6 && parts[1] == "populations" && parts[3] == "rounds" && parts[5] == "model") {
    require_method(request, {"GET", "HEAD"});
    const auto round = static_cast<int>(parse_round(parts[4]));
    return model_response(request, repository_.model(parts[2], round));
  }
  // /v1/populations/{p}/rounds/{r}/model:select
  if (n == 6 && parts[1] == "populations" && parts[3] == "rounds" && parts[5] == "model:select") {
    require_method(request, {"POST"});
    return select_response(request, parts[2], static_cast<int>(parse_round(parts[4])));
  }
  // /v1/tasks/{id}/result
  if (n == 4 && parts[1] == "tasks" && parts[3] == "result") {
    require_method(request, {"PUT"});
    const std::int64_t task_id = parse_id(parts[2], "task");
    const std::string token = bearer(request);
    const UploadOutcome outcome = repository_.upload(task_id, token, std::move(request.body));
    return Response::json(outcome.status, receipt_json(outcome.receipt));
  }
  throw NotFound("no such path: " + path);
}

}  // namespace fedleaf::server
