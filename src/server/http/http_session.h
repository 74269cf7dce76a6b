// Session: one HTTP connection of HttpServer (http_server.h), and Shared, what every connection
// shares. Internal to the HTTP adapter: http_session.cc reads, dispatches and writes;
// http_session_long_poll.cc parks long-poll claims.
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "server/http/cors_policy.h"
#include "server/http/http_server.h"

namespace fedleaf::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// A steady-clock duration of s seconds (timeouts are configured in seconds).
inline std::chrono::steady_clock::duration steady_seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

class Session;

// What every connection shares: the handler, limits, and the registry used for shutdown.
struct Shared {
  Shared(const RequestHandler& h, ClaimParking& p, CommitGate& g, ServerMetrics& m,
         HttpServerOptions o, std::shared_ptr<spdlog::logger> l)
      : handler(h),
        parking(p),
        commit_gate(g),
        metrics(m),
        options(std::move(o)),
        cors(options.cors_origins),
        logger(std::move(l)) {}
  const RequestHandler& handler;
  ClaimParking& parking;
  CommitGate& commit_gate;
  ServerMetrics& metrics;
  HttpServerOptions options;
  CorsPolicy cors;
  std::shared_ptr<spdlog::logger> logger;
  std::atomic<bool> stopping{false};
  std::mutex sessions_mutex;
  std::set<Session*> sessions;
};

// One connection: reads a request (framing, limits, timeouts), answers it (after its group
// commit, or parked as a long-poll claim), keeps the connection alive or closes it. Every member
// runs on the connection's strand.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Shared& shared);
  ~Session();
  void start();
  // Answers 429 and closes (the server is at its connection limit).
  void reject_busy();
  // Shutdown: closes the connection if it is waiting for a request; answers a parked claim now.
  void close_if_idle();

 private:
  void read_header();

  // Read deadlines use our own timer rather than tcp_stream's expiry, which closes the socket:
  // a timed-out read is cancelled, and the connection stays open for the 408 answer.
  void start_read_timer(double timeout_s);
  // Stops the read timer; returns whether the read it guarded timed out.
  bool stop_read_timer();
  void on_header(beast::error_code ec);
  void read_body();
  void on_body(beast::error_code ec);
  void dispatch();
  void respond(Response response);

  // Parks a claim that found nothing until ClaimParking wakes it (then it is handled again) or
  // its wait is over (then its 204 is sent). Each park has a generation, so a stale wake or
  // timer of an earlier park of this request does nothing.
  void park(Response response);

  // What the client's side of the connection says, read without consuming a byte: closed (end
  // of stream, or an error such as a reset), more bytes sent (a pipelined request), or nothing.
  enum class Peer { kQuiet, kClosed, kSending };
  Peer peer();

  // A parked claim keeps a wait on its socket, so a client that closes the connection is seen
  // at once: its claim is dropped (no task is leased to a connection no answer can reach). A
  // client that sends more bytes (a pipelined request) is not watched further.
  void watch_peer(std::uint64_t generation);

  // Ends the parked state (its timer and its watch on the socket); the ClaimParking entry is the
  // caller's to cancel, or already woken.
  void unpark();

  // The client of a parked claim has gone: the claim ends unanswered.
  void drop_claim();

  // Sends the parked claim's 204 (its wait is over, or the server is stopping).
  void send_parked();

  // Hands the response to group commit; it is written on this connection's strand once the
  // commit (and, for kSync, the store sync) covering this request's work has returned.
  void write_after_group_commit(Response response, bool keep_alive, bool head);
  void send_error(const std::exception& error, const std::string& = "",
                  const std::string& retry_after = "");
  void write(const Response& response, bool keep_alive, bool head);

  // Gives back the lease of an answer that did not reach its client; the next group commit
  // (requested here) makes the task leasable for other servers sharing the store too.
  void release_lease(const HandedLease& lease);
  void close();

  // After an error answer to a request whose body was not read: closing at once while the
  // client is still sending would reset the connection, and a reset can discard the answer
  // before the client reads it. Stop sending, then read and discard for a bounded time.
  void drain_then_close();
  void drain_some();
  static constexpr std::size_t kMaxDrainBytes = 4 * 1024 * 1024;

  beast::tcp_stream stream_;
  Shared& shared_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<const std::string> body_;  // the response body being written
  std::string origin_;
  bool is_upload_ = false;
  bool body_unread_ = false;  // an error answer went out before the request body was read
  std::size_t drained_ = 0;
  bool idle_ = true;
  net::steady_timer read_timer_;
  std::uint64_t read_generation_ = 0;
  bool read_timed_out_ = false;
  // The request being answered and how (kept for a parked claim, which is handled again).
  Request request_;
  bool keep_alive_ = false;
  bool head_ = false;
  // Long-poll claim: the 204 held back, the end of its wait, the ClaimParking ticket.
  std::optional<Response> parked_;
  std::optional<std::chrono::steady_clock::time_point> claim_deadline_;
  net::steady_timer claim_timer_;
  std::uint64_t ticket_ = 0;
  std::uint64_t park_generation_ = 0;
};

}  // namespace fedleaf::server
