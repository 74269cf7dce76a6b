// HttpServer: the Boost.Beast adapter in front of a RequestHandler (the Router) — HTTP/1.1 with
// keep-alive on a small thread pool, request limits and timeouts, CORS, and graceful shutdown.
// It is handed the narrow interfaces it uses (RequestHandler, ClaimParking, CommitGate) and
// includes nothing of the repository.
//
//   ListeningSocket socket(address, port);   // bound before the store opens (port 0 picks one)
//   HttpServer server(std::move(socket), router, repository.waiters(), group_commit, metrics,
//                     options, logger);
//   std::cout << server.port();   // the bound port
//   server.run();                 // returns after SIGTERM/SIGINT or stop(), drained
//
// Limits: a request whose Content-Length exceeds max_body_bytes gets 413 before its body is
// read (a chunked body is cut off at the limit with 413); a request whose header does not arrive
// within header_timeout_s, or whose body does not arrive within body_timeout_s, gets 408; an idle
// keep-alive connection is closed after header_timeout_s; connections beyond max_connections get
// 429. Error responses close the connection.
//
// CORS: a request whose Origin is in cors_origins gets Access-Control-Allow-Origin with that
// origin ("*" in the list allows any origin, answered with "*"); credentials are never allowed
// (tokens travel in the Authorization header, never in cookies). OPTIONS preflights are answered
// here, before the protocol-version check, since browsers cannot add headers to them.
//
// Group commit: a response whose send_after is kCommit (claims) or kSync (uploads) is handed
// to the CommitGate (GroupCommit) and written when the commit (and sync) covering its work returns;
// the connection stays busy meanwhile and the I/O threads serve other connections. When that step
// fails, the answer becomes 503 unavailable instead.
//
// Long-poll claims: a response carrying `wait` (a claim with {"wait_s": s} that found nothing) is
// not sent; the session parks on ClaimParking (ClaimWaiters) — a callback and a timer, no thread —
// and handles the request again when woken (a task may have appeared) or sends its 204 once s has
// passed. Every answer it finally sends still waits for its group commit like any claim; parking
// asks for a commit itself, so what the handling wrote is never left for a later request. A woken
// claim is not charged to the client rate limit again (RequestHandler::handle_woken). Deadlines are
// not checked here: DeadlineTicker drives the repository's tick().
//
// Client disconnects: a parked claim keeps a wait on its socket, so a client that closes the
// connection (end of stream or reset) is seen at once — its claim is unparked and dropped, with
// no answer. A woken claim whose client has gone is dropped before it is handled. An answer
// carrying a task (Response::lease) whose client is seen gone before the write, or whose write
// fails, gives its lease back (RequestHandler::release_undelivered): the task goes to another leaf
// at once instead of being lost for a whole lease. (An answer the kernel accepted before the close
// was seen is lost with the connection: its lease expires as usual.)
//
// Shutdown: on SIGTERM/SIGINT the acceptor closes, idle connections close, requests in flight
// finish and their responses are written (with Connection: close; parked claims get their 204 at
// once), then run() returns; requests
// still running after shutdown_grace_s are abandoned.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/api/request_handler.h"
#include "server/http/listening_socket.h"
#include "server/util/claim_parking.h"
#include "server/util/commit_gate.h"
#include "server/util/server_metrics.h"

namespace spdlog {
class logger;
}

namespace fedleaf::server {

struct HttpServerOptions {
  int threads = 2;
  std::uint64_t max_body_bytes = 64ull << 20;
  double header_timeout_s = 10;
  double body_timeout_s = 60;
  std::size_t max_connections = 10000;
  std::vector<std::string> cors_origins;
  double shutdown_grace_s = 30;
};

class HttpServer {
 public:
  // Accepts on the socket. The handler (the Router), the parking (ClaimWaiters), the commit
  // gate (GroupCommit) and metrics must outlive the server.
  HttpServer(ListeningSocket socket, const RequestHandler& handler, ClaimParking& parking,
             CommitGate& commit_gate, ServerMetrics& metrics, HttpServerOptions options,
             std::shared_ptr<spdlog::logger> logger);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  unsigned short port() const;
  // Serves on options.threads threads (the caller's included) until shutdown completes.
  void run();
  // Starts a graceful shutdown (thread-safe; what SIGTERM does).
  void stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fedleaf::server
