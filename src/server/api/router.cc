#include "server/api/router.h"

#include <cstdlib>
#include <vector>

#include "core/version.h"
#include "server/api/claim_body.h"
#include "server/api/static_files.h"
#include "server/api/wire_json.h"
#include "server/util/server_errors.h"
#include "server/util/tokens.h"

namespace fedleaf::server {

namespace {

std::string server_version() {
  return std::to_string(kVersionMajor) + "." + std::to_string(kVersionMinor);
}

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

std::int64_t parse_id(const std::string& text, const char* what) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || v < 0) {
    throw NotFound(std::string(what) + " '" + text + "' is not a number");
  }
  return v;
}

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

// GET /v1/populations/{p} and /v1/populations/{p}/rounds/{r}/model: they may reveal a round
// closed in the repository's open batch, so they wait for its sync like uploads.
bool reads_population(const std::string& path) {
  if (path.rfind("/v1/populations/", 0) != 0) return false;
  const std::size_t slash = path.find('/', 16);
  return slash == std::string::npos ||
         (path.size() > 6 && path.compare(path.size() - 6, 6, "/model") == 0);
}

}  // namespace

void check_protocol_version(const Request& request) {
  const std::string header = request.header("fedleaf-version");
  const std::string ours = server_version();
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
    : repository_(repository), metrics_(metrics), options_(std::move(options)) {}

void Router::check_admin(const Request& request) const {
  if (!token_matches(bearer(request), options_.admin_token_hash)) {
    throw Forbidden("the admin token does not match");
  }
}

Response Router::handle(const Request& request) const {
  const std::string path = request.path();
  const bool is_upload = path.rfind("/v1/tasks/", 0) == 0;
  const bool is_claim = path.size() > 12 && path.compare(path.size() - 12, 12, "/tasks:claim") == 0;
  Response response;
  try {
    response = route(request);
  } catch (const std::exception& e) {
    response = error_response(e);
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

Response Router::route(const Request& request) const {
  const std::string path = request.path();
  if (path == "/healthz") {
    require_method(request, {"GET", "HEAD"});
    return Response::json(200, health_json().dump());
  }
  if (path == "/metrics") {
    require_method(request, {"GET", "HEAD"});
    Response r;
    r.set_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    r.body = std::make_shared<const std::string>(
        metrics_.render(repository_.open_leases(), repository_.waiters().waiting()));
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
        repository_.create_population(parse_population_spec(request.body));
    return Response::json(201, created_population_json(created).dump())
        .set_header("Location", population_url(created.id));
  }
  // /v1/populations/{p}
  if (n == 3 && parts[1] == "populations") {
    require_method(request, {"GET", "HEAD"});
    return Response::json(200, status_json(repository_.status(parts[2])).dump());
  }
  // /v1/populations/{p}/tasks:claim
  if (n == 4 && parts[1] == "populations" && parts[3] == "tasks:claim") {
    require_method(request, {"POST"});
    const std::string token = bearer(request);
    const ClaimBody claim = parse_claim_body(request.body);
    const ClaimOutcome outcome = repository_.claim(parts[2], token, claim.min_round);
    if (const auto* task = std::get_if<TaskAssignment>(&outcome)) {
      return Response::json(200, task_json(*task));
    }
    const auto& retry = std::get<RetryLater>(outcome);
    Response r;
    r.status = 204;
    r.set_header("Retry-After", std::to_string(static_cast<long long>(retry.retry_after_s)));
    r.set_header("Fedleaf-Retry-After-Ms",
                 std::to_string(static_cast<long long>(retry.retry_after_ms)));
    r.set_header("Fedleaf-Population-State", retry.finished ? "finished" : "running");
    if (claim.wait_s > 0 && !retry.finished) {
      r.wait = ClaimWait{parts[2], retry.wake_epoch, claim.wait_s};
    }
    return r;
  }
  // /v1/populations/{p}/rounds/{r}/model — the place for every route on a round's published
  // model: repository_.model(p, r) hands out its ETag and shared, immutable bytes (no copy).
  if (n == 6 && parts[1] == "populations" && parts[3] == "rounds" && parts[5] == "model") {
    require_method(request, {"GET", "HEAD"});
    const std::int64_t round = parse_id(parts[4], "round");
    if (round > 1'000'000'000) throw NotFound("round " + parts[4] + " does not exist");
    return model_response(request, repository_.model(parts[2], static_cast<int>(round)));
  }
  // /v1/tasks/{id}/result
  if (n == 4 && parts[1] == "tasks" && parts[3] == "result") {
    require_method(request, {"PUT"});
    const std::int64_t task_id = parse_id(parts[2], "task");
    const std::string token = bearer(request);
    const UploadOutcome outcome = repository_.upload(task_id, token, request.body);
    return Response::json(outcome.status, receipt_json(outcome.receipt));
  }
  throw NotFound("no such path: " + path);
}

}  // namespace fedleaf::server
