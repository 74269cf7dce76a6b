// Router: the HTTP API of the task repository over transport-independent messages.
//
//   Router router(repository, metrics, {hash_token(admin_token), "web_demo"});
//   Response res = router.handle(request);   // never throws
//
// Order of checks for /v1/ requests: protocol version (426), then routing (404/405), then
// authentication (401/403), then the call. Every error becomes {"error": {"code", "message"}}
// via error_response(); paths outside /v1/, /healthz and /metrics are static files of web_root.
// The repository leaves claims, uploads and round closes in its open batch (committed later by
// GroupCommit), so answers carry send_after: every answer to a claim kCommit (a lease handed out
// survives a killed process); every answer to an upload (PUT /v1/tasks/{id}/result, any status)
// kSync — a 2xx then always names a durable result, and a 409/410 never rests on a state a
// crash could undo; population status, model downloads and model:select kSync, so a new
// round's model is never seen before it is durable. The transport must honour it. A claim whose
// body asks to wait ({"wait_s": s}) and found nothing carries Response::wait: the transport may
// park it and call handle_woken() with the same request when ClaimWaiters wakes it (see
// http/http_server.h).
// Thread-safe (TaskRepository and ServerMetrics are).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/api/client_rate_limiter.h"
#include "server/api/http_message.h"
#include "server/api/request_handler.h"
#include "server/repository/task_repository.h"
#include "server/util/server_metrics.h"

namespace spdlog {
class logger;
}

namespace fedleaf::server {

struct RouterOptions {
  std::string admin_token_hash;  // hash_token() of the admin token
  std::string web_root;          // static files; empty: none
  // Debug events of calls (model:select: tensor names and id counts, never ids); null: none.
  std::shared_ptr<spdlog::logger> logger;
  // Requests per client token (claims, model:select): 429 with Retry-After past it; off when
  // its rate is 0.
  RateLimit client_rate_limit;
  // What failed, once the server can no longer keep its promises (GroupCommit::failure(): every
  // answer that needs a commit is 503 until a restart); /healthz then answers 503 naming it, so
  // a balancer takes this server out. Empty: always healthy.
  std::function<std::optional<std::string>()> failure;
};

class Router final : public RequestHandler {
 public:
  Router(TaskRepository& repository, ServerMetrics& metrics, RouterOptions options);
  // An upload's body is moved out of `request` into the store (an upload's bytes are never
  // copied); every other request is left as it was (a parked claim is handled again from it).
  Response handle(Request& request) const override;
  Response handle(Request&& request) const { return handle(request); }
  // A parked claim handled again once ClaimWaiters woke it: handle() without charging the
  // client's rate limit, which its arrival already did — a request is admitted once (charged
  // again, admitted waiting claims got 429 the moment their round opened, and its tasks sat
  // free).
  Response handle_woken(Request& request) const override;
  // Gives back the lease of a claim answer the transport could not deliver
  // (TaskRepository::release_lease). Never throws: a lease it cannot give back expires as any
  // other (logged when a logger is set).
  void release_undelivered(const HandedLease& lease) const override;

 private:
  // admitted: the request was charged to its client's rate limit already (a woken claim).
  Response handle(Request& request, bool admitted) const;
  Response route(Request& request, bool admitted) const;
  void check_admin(const Request& request) const;
  Response control_response(const Request& request, const std::string& target) const;
  // revoke: the path's last part ("{id}:revoke"), or null for /tokens itself.
  Response tokens_response(const Request& request, const std::string& population,
                           const std::string* revoke) const;
  // A private population's devices (router_devices.cc): POST enrolls one (client token), GET
  // lists them (admin); POST {id}:revoke revokes one (admin). action: the path's last part, or
  // null for /devices itself.
  Response devices_response(const Request& request, const std::string& population,
                            const std::string* action) const;
  Response select_response(const Request& request, const std::string& population, int round) const;
  // Throws TooManyRequests (with the time to wait) when `token` is over its rate limit.
  void admit_client(const std::string& token) const;

  TaskRepository& repository_;
  ServerMetrics& metrics_;
  RouterOptions options_;
  mutable ClientRateLimiter client_limiter_;
};

// Checks the Fedleaf-Version header of a /v1/ request: a value whose major differs from the
// server's (or that is not MAJOR.MINOR) is UpgradeRequired, as is a missing header on a request
// that changes state (POST, PUT). Both versions are named in the message.
void check_protocol_version(const Request& request);

}  // namespace fedleaf::server
