// Transport-independent HTTP request and response, as the router sees them.
//
//   Request req{"PUT", "/v1/tasks/7/result", {{"authorization", "Bearer abc"}}, body};
//   Response res = router.handle(req);
//   res.status == 201;  res.header("content-type") == "application/json";
//
// Header names are lower-case. A Response body is shared and immutable, so a cached model is
// sent to many clients without copies.
#pragma once

#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fedleaf::server {

struct Request {
  std::string method;
  std::string target;                          // path and query, as sent
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;

  // The header's value, or "" when absent; the name matches in any case.
  std::string header(const std::string& name) const;
  // The target without its query string.
  std::string path() const;
};

// The request target in origin form (`/path?query`). An absolute-form target
// (`http://host:port/path?query`, RFC 9112 §3.2.2: what a client talking to a proxy sends, and
// which a server must accept) loses its scheme and authority; an empty path becomes "/". Any
// other target is returned as it is.
std::string origin_form(const std::string& target);

// What must happen before a response may be sent (group commit, see GroupCommit): nothing;
// the commit of the repository's open batch (the answer reports state that must survive a
// killed process: a lease); or that commit and a store sync (it reports an accepted result,
// which must survive power loss).
enum class SendAfter { kNothing, kCommit, kSync };

// A claim that may wait for a task (long poll): rather than sending its 204 at once, the
// transport parks the request on ClaimParking (population, epoch), handles it again when woken,
// and sends the 204 once wait_s has passed without a task.
struct ClaimWait {
  std::string population;
  std::uint64_t epoch = 0;
  double wait_s = 0;
};

// The lease a claim's answer hands out. A transport that cannot deliver that answer (the client
// closed its connection) gives it back with RequestHandler::release_undelivered, so the task
// goes to another leaf at once instead of sitting out a whole lease.
struct HandedLease {
  std::int64_t task_id = 0;
  std::string lease_token;
};

struct Response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::shared_ptr<const std::string> body = std::make_shared<const std::string>();
  SendAfter send_after = SendAfter::kNothing;
  std::optional<ClaimWait> wait;     // set: a claim the transport may park (see ClaimWait)
  std::optional<HandedLease> lease;  // set: a claim's task (see HandedLease)

  // A JSON response (Content-Type: application/json) with the given serialised body.
  static Response json(int status, std::string body);
  // The value of the first header with this lower-case name, or "".
  std::string header(const std::string& lower_name) const;
  Response& set_header(std::string name, std::string value);
};

// {"error": {"code": ..., "message": ...}} with the status error_reply() assigns.
Response error_response(const std::exception& error);

}  // namespace fedleaf::server
