#include "server/http/http_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <sys/socket.h>

#include "core/version.h"
#include "server/api/protocol_headers.h"
#include "server/http/cors_policy.h"
#include "server/http/request_framing.h"
#include "server/util/server_errors.h"

namespace fedleaf::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

}  // namespace

class Session;

// What every connection shares: the router, limits, and the registry used for shutdown.
struct Shared {
  Shared(Router& r, ClaimWaiters& w, GroupCommit& g, ServerMetrics& m, HttpServerOptions o,
         std::shared_ptr<spdlog::logger> l)
      : router(r),
        waiters(w),
        group_commit(g),
        metrics(m),
        options(std::move(o)),
        cors(options.cors_origins),
        logger(std::move(l)) {}
  Router& router;
  ClaimWaiters& waiters;
  GroupCommit& group_commit;
  ServerMetrics& metrics;
  HttpServerOptions options;
  CorsPolicy cors;
  std::shared_ptr<spdlog::logger> logger;
  std::atomic<bool> stopping{false};
  std::mutex sessions_mutex;
  std::set<Session*> sessions;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Shared& shared)
      : stream_(std::move(socket)),
        shared_(shared),
        read_timer_(stream_.get_executor()),
        claim_timer_(stream_.get_executor()) {
    std::lock_guard lock(shared_.sessions_mutex);
    shared_.sessions.insert(this);
  }
  ~Session() {
    std::lock_guard lock(shared_.sessions_mutex);
    shared_.sessions.erase(this);
  }

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
  }
  // Answers 429 and closes (the server is at its connection limit).
  void reject_busy() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->send_error(TooManyRequests("the server is at its connection limit; retry later"), "",
                       "1");
    });
  }
  // Shutdown: closes the connection if it is waiting for a request; answers a parked claim now.
  void close_if_idle() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (self->idle_) {
        beast::error_code ec;
        self->stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
        self->stream_.close();
      } else if (self->parked_ &&
                 self->shared_.waiters.cancel(self->parked_->wait->population, self->ticket_)) {
        self->send_parked();
      }
    });
  }

 private:
  void read_header() {
    idle_ = true;
    if (shared_.stopping) return close();
    parser_.emplace();
    parser_->header_limit(64 * 1024);
    parser_->body_limit(shared_.options.max_body_bytes);
    stream_.expires_never();
    start_read_timer(shared_.options.header_timeout_s);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
  }

  // Read deadlines use our own timer rather than tcp_stream's expiry, which closes the socket:
  // a timed-out read is cancelled, and the connection stays open for the 408 answer.
  void start_read_timer(double timeout_s) {
    const std::uint64_t generation = ++read_generation_;
    read_timer_.expires_after(seconds(timeout_s));
    read_timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
      if (ec || generation != self->read_generation_) return;
      self->read_timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
  }
  // Stops the read timer; returns whether the read it guarded timed out.
  bool stop_read_timer() {
    ++read_generation_;
    read_timer_.cancel();
    const bool timed_out = read_timed_out_;
    read_timed_out_ = false;
    return timed_out;
  }

  void on_header(beast::error_code ec) {
    idle_ = false;
    if (stop_read_timer()) {
      // Silence on an idle keep-alive connection is not an error; a partial header is.
      if (buffer_.size() == 0) return close();
      return send_error(RequestTimeout("the request header did not arrive within " +
                                       std::to_string(shared_.options.header_timeout_s) + " s"));
    }
    if (ec) {
      // Limits first: the parser reports a Content-Length over the body limit as soon as the
      // header is complete, typically with nothing of the body buffered yet (a client that sent
      // "Expect: 100-continue" waits for this answer).
      if (ec == http::error::header_limit) {
        body_unread_ = true;
        return send_error(PayloadTooLarge("the request header exceeds 64 KiB"));
      }
      if (ec == http::error::body_limit) {
        body_unread_ = true;
        const auto length = parser_->content_length();
        return send_error(PayloadTooLarge(
            "request body" + (length ? " of " + std::to_string(*length) + " bytes" : "") +
            " exceeds the limit of " + std::to_string(shared_.options.max_body_bytes) + " bytes"));
      }
      if (ec == http::error::end_of_stream || ec == net::error::operation_aborted ||
          ec == net::error::connection_reset || ec == net::error::eof || buffer_.size() == 0) {
        return close();
      }
      return send_error(InvalidInput("malformed HTTP request: " + ec.message()));
    }
    const auto& header = parser_->get();
    origin_ = std::string(header[http::field::origin]);
    is_upload_ = origin_form(std::string(header.target())).rfind("/v1/tasks/", 0) == 0;
    if (auto length = parser_->content_length();
        length && *length > shared_.options.max_body_bytes) {
      body_unread_ = true;
      return send_error(PayloadTooLarge("request body of " + std::to_string(*length) +
                                        " bytes exceeds the limit of " +
                                        std::to_string(shared_.options.max_body_bytes) + " bytes"));
    }
    try {
      check_transfer_codings(header);
    } catch (const InvalidInput& e) {
      body_unread_ = true;
      return send_error(e);
    }
    if (parser_->is_done()) return dispatch();
    if (beast::iequals(header[http::field::expect], "100-continue")) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
      http::async_write(stream_, *cont,
                        [self = shared_from_this(), cont](beast::error_code wec, std::size_t) {
                          if (wec) return self->close();
                          self->read_body();
                        });
      return;
    }
    read_body();
  }

  void read_body() {
    start_read_timer(shared_.options.body_timeout_s);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    if (stop_read_timer()) {
      body_unread_ = true;
      return send_error(RequestTimeout("the request body did not arrive within " +
                                       std::to_string(shared_.options.body_timeout_s) + " s"));
    }
    if (ec == http::error::body_limit) {
      body_unread_ = true;
      return send_error(PayloadTooLarge("request body exceeds the limit of " +
                                        std::to_string(shared_.options.max_body_bytes) + " bytes"));
    }
    if (ec) {
      if (ec == http::error::end_of_stream || ec == net::error::connection_reset ||
          ec == net::error::eof || ec == net::error::operation_aborted) {
        return close();
      }
      return send_error(InvalidInput("malformed HTTP request body: " + ec.message()));
    }
    dispatch();
  }

  void dispatch() {
    stream_.expires_never();
    http::request<http::string_body> message = parser_->release();
    keep_alive_ = message.keep_alive();
    head_ = message.method() == http::verb::head;
    const bool preflight = message.method() == http::verb::options;
    Request request;
    try {
      request = to_request(std::move(message));
    } catch (const InvalidInput& e) {
      return send_error(e);
    }
    shared_.metrics.add_bytes_in(request.body.size());

    Response response;
    if (preflight) {
      response.status = 204;
      for (auto& [name, value] : shared_.cors.preflight_headers(origin_)) {
        response.set_header(std::move(name), std::move(value));
      }
      shared_.metrics.count_request(204);
    } else {
      response = shared_.router.handle(request);
    }
    if (shared_.logger && shared_.logger->should_log(spdlog::level::debug)) {
      shared_.logger->debug("event=request method={} target={} status={} bytes_in={}",
                            request.method, request.target, response.status, request.body.size());
    }
    request_ = std::move(request);
    respond(std::move(response));
  }

  void respond(Response response) {
    if (response.wait) {
      const auto now = std::chrono::steady_clock::now();
      if (!claim_deadline_) claim_deadline_ = now + seconds(response.wait->wait_s);
      if (now < *claim_deadline_ && !shared_.stopping) return park(std::move(response));
      response.wait.reset();
      shared_.metrics.count_request(response.status);
    }
    claim_deadline_.reset();
    if (response.send_after != SendAfter::kNothing) {
      return write_after_group_commit(std::move(response), keep_alive_, head_);
    }
    write(response, keep_alive_ && !shared_.stopping, head_);
  }

  // Parks a claim that found nothing until ClaimWaiters wakes it (then it is handled again) or
  // its wait is over (then its 204 is sent). Each park has a generation, so a stale wake or
  // timer of an earlier park of this request does nothing.
  void park(Response response) {
    const ClaimWait wait = *response.wait;
    parked_ = std::move(response);
    const std::uint64_t generation = ++park_generation_;
    claim_timer_.expires_at(*claim_deadline_);
    claim_timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
      if (ec || generation != self->park_generation_ || !self->parked_) return;
      // Not parked any more: the wake is on its way and will answer (the deadline has passed).
      if (!self->shared_.waiters.cancel(self->parked_->wait->population, self->ticket_)) return;
      self->send_parked();
    });
    // A weak reference: the pending timer keeps the session alive, and a waiter left in
    // ClaimWaiters (which outlives the server) must not own a session.
    ticket_ =
        shared_.waiters.park(wait.population, wait.epoch, [weak = weak_from_this(), generation] {
          const auto self = weak.lock();
          if (!self) return;
          net::post(self->stream_.get_executor(), [self, generation] {
            if (generation != self->park_generation_ || !self->parked_) return;
            self->unpark();
            // A client that left while the wake was on its way gets no task.
            if (self->peer() == Peer::kClosed) return self->drop_claim();
            self->respond(self->shared_.router.handle_woken(self->request_));
          });
        });
    watch_peer(generation);
  }

  // What the client's side of the connection says, read without consuming a byte: closed (end
  // of stream, or an error such as a reset), more bytes sent (a pipelined request), or nothing.
  enum class Peer { kQuiet, kClosed, kSending };
  Peer peer() {
    char byte = 0;
    const ssize_t n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return Peer::kSending;
    if (n == 0) return Peer::kClosed;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? Peer::kQuiet : Peer::kClosed;
  }

  // A parked claim keeps a wait on its socket, so a client that closes the connection is seen
  // at once: its claim is dropped (no task is leased to a connection no answer can reach). A
  // client that sends more bytes (a pipelined request) is not watched further.
  void watch_peer(std::uint64_t generation) {
    stream_.socket().async_wait(
        tcp::socket::wait_read, [self = shared_from_this(), generation](beast::error_code ec) {
          if (ec || generation != self->park_generation_ || !self->parked_) return;
          switch (self->peer()) {
            case Peer::kClosed: {
              const std::string population = self->parked_->wait->population;
              self->unpark();
              self->shared_.waiters.cancel(population, self->ticket_);
              return self->drop_claim();
            }
            case Peer::kQuiet:
              return self->watch_peer(generation);
            case Peer::kSending:
              return;
          }
        });
  }

  // Ends the parked state (its timer and its watch on the socket); the ClaimWaiters entry is the
  // caller's to cancel, or already woken.
  void unpark() {
    parked_.reset();
    ++park_generation_;
    claim_timer_.cancel();
    beast::error_code ignored;
    stream_.socket().cancel(ignored);
  }

  // The client of a parked claim has gone: the claim ends unanswered.
  void drop_claim() {
    claim_deadline_.reset();
    close();
  }

  // Sends the parked claim's 204 (its wait is over, or the server is stopping).
  void send_parked() {
    Response response = std::move(*parked_);
    unpark();
    claim_deadline_ = std::chrono::steady_clock::now();
    respond(std::move(response));
  }

  // Hands the response to group commit; it is written on this connection's strand once the
  // commit (and, for kSync, the store sync) covering this request's work has returned.
  void write_after_group_commit(Response response, bool keep_alive, bool head) {
    const SendAfter after = response.send_after;
    auto release = [self = shared_from_this(), response = std::move(response), keep_alive,
                    head](bool ok) mutable {
      net::post(self->stream_.get_executor(),
                [self, response = std::move(response), keep_alive, head, ok]() mutable {
                  if (!ok) {
                    response = error_response(Unavailable(
                        "the store could not commit this request's changes; they may or may "
                        "not be kept: retry the same request after the server restarts"));
                  }
                  self->write(response, keep_alive && !self->shared_.stopping, head);
                });
    };
    if (after == SendAfter::kSync) {
      shared_.group_commit.after_durable(std::move(release));
    } else {
      shared_.group_commit.after_commit(std::move(release));
    }
  }

  void send_error(const std::exception& error, const std::string& = "",
                  const std::string& retry_after = "") {
    Response response = error_response(error);
    if (!retry_after.empty()) response.set_header("Retry-After", retry_after);
    const int status = response.status;
    shared_.metrics.count_request(status);
    if (is_upload_) {
      shared_.metrics.count_upload(status);
      if (status == 413) shared_.metrics.count_rejection("too_large");
      if (status == 408) shared_.metrics.count_rejection("timeout");
    }
    if (shared_.logger) {
      shared_.logger->info("event=request_rejected status={} message=\"{}\"", status, error.what());
    }
    write(response, false, false);
  }

  void write(const Response& response, bool keep_alive, bool head) {
    // A task for a client that has closed the connection goes back at once.
    if (response.lease && peer() == Peer::kClosed) {
      release_lease(*response.lease);
      return close();
    }
    auto message = std::make_shared<http::response<http::span_body<const char>>>();
    message->version(11);
    message->result(static_cast<unsigned>(response.status));
    for (const auto& [name, value] : response.headers) message->insert(name, value);
    message->set(http::field::server, std::string("fedleaf-server/") + kVersion);
    message->set(kFedleafVersion, protocol_version());
    for (const auto& [name, value] : shared_.cors.response_headers(origin_)) {
      message->set(name, value);
    }
    body_ = response.body;
    const bool bodyless = response.status == 204 || response.status == 304;
    if (!bodyless) {
      message->content_length(body_->size());
      if (!head) message->body() = {body_->data(), body_->size()};
    }
    message->keep_alive(keep_alive);
    stream_.expires_after(seconds(std::max(shared_.options.body_timeout_s, 30.0)));
    http::async_write(stream_, *message,
                      [self = shared_from_this(), message, keep_alive, lease = response.lease](
                          beast::error_code ec, std::size_t bytes) {
                        self->shared_.metrics.add_bytes_out(bytes);
                        self->body_.reset();
                        if (ec && lease) self->release_lease(*lease);
                        if (!ec && self->body_unread_) return self->drain_then_close();
                        if (ec || !keep_alive) return self->close();
                        self->read_header();
                      });
  }

  // Gives back the lease of an answer that did not reach its client; the next group commit
  // (requested here) makes the task leasable for other servers sharing the store too.
  void release_lease(const HandedLease& lease) {
    shared_.router.release_undelivered(lease);
    shared_.group_commit.after_commit([](bool) {});
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  // After an error answer to a request whose body was not read: closing at once while the
  // client is still sending would reset the connection, and a reset can discard the answer
  // before the client reads it. Stop sending, then read and discard for a bounded time.
  void drain_then_close() {
    body_unread_ = false;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    drained_ = 0;
    stream_.expires_after(seconds(2));
    drain_some();
  }
  void drain_some() {
    auto scratch = std::make_shared<std::array<char, 16 * 1024>>();
    stream_.async_read_some(net::buffer(*scratch), [self = shared_from_this(), scratch](
                                                       beast::error_code ec, std::size_t n) {
      self->drained_ += n;
      if (ec || self->drained_ > kMaxDrainBytes) return self->close();
      self->drain_some();
    });
  }
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
  // Long-poll claim: the 204 held back, the end of its wait, the ClaimWaiters ticket.
  std::optional<Response> parked_;
  std::optional<std::chrono::steady_clock::time_point> claim_deadline_;
  net::steady_timer claim_timer_;
  std::uint64_t ticket_ = 0;
  std::uint64_t park_generation_ = 0;
};

class HttpServer::Impl {
 public:
  Impl(ListeningSocket socket, Router& router, ClaimWaiters& waiters, GroupCommit& group_commit,
       ServerMetrics& metrics, HttpServerOptions options, std::shared_ptr<spdlog::logger> logger)
      : shared_(router, waiters, group_commit, metrics, std::move(options), std::move(logger)),
        ioc_(std::max(1, shared_.options.threads)),
        acceptor_(net::make_strand(ioc_)),
        signals_(ioc_, SIGTERM, SIGINT),
        drain_timer_(ioc_),
        port_(socket.port()) {
    beast::error_code ec;
    acceptor_.assign(socket.ipv6() ? tcp::v6() : tcp::v4(), socket.release(), ec);
    if (ec)
      throw Error("http server: cannot accept on port " + std::to_string(port_) + ": " +
                  ec.message());
  }

  unsigned short port() const { return port_; }

  void run() {
    accept();
    signals_.async_wait([this](beast::error_code ec, int) {
      if (!ec) begin_shutdown();
    });
    std::vector<std::thread> pool;
    for (int i = 1; i < shared_.options.threads; ++i) pool.emplace_back([this] { ioc_.run(); });
    ioc_.run();
    for (auto& t : pool) t.join();
  }

  void stop() {
    net::post(ioc_, [this] { begin_shutdown(); });
  }

 private:
  void accept() {
    acceptor_.async_accept(net::make_strand(ioc_),
                           [this](beast::error_code ec, tcp::socket socket) {
                             if (ec) {
                               if (!acceptor_.is_open()) return;
                               // Out of file descriptors or a transient error: keep accepting.
                               return accept();
                             }
                             socket.set_option(tcp::no_delay(true), ec);
                             std::size_t active = 0;
                             {
                               std::lock_guard lock(shared_.sessions_mutex);
                               active = shared_.sessions.size();
                             }
                             auto session = std::make_shared<Session>(std::move(socket), shared_);
                             if (active >= shared_.options.max_connections) {
                               session->reject_busy();
                             } else {
                               session->start();
                             }
                             accept();
                           });
  }

  void begin_shutdown() {
    if (shared_.stopping.exchange(true)) return;
    if (shared_.logger) shared_.logger->info("event=shutdown_started");
    beast::error_code ec;
    acceptor_.close(ec);
    signals_.cancel(ec);
    shutdown_started_ = std::chrono::steady_clock::now();
    drain();
  }

  // Closes idle connections and waits for the busy ones; the io_context then runs out of work.
  void drain() {
    std::vector<std::shared_ptr<Session>> idle;
    bool empty = false;
    {
      std::lock_guard lock(shared_.sessions_mutex);
      empty = shared_.sessions.empty();
      for (Session* s : shared_.sessions) {
        if (auto p = s->weak_from_this().lock()) idle.push_back(std::move(p));
      }
    }
    for (auto& s : idle) s->close_if_idle();
    if (empty) return;
    if (std::chrono::steady_clock::now() - shutdown_started_ >
        seconds(shared_.options.shutdown_grace_s)) {
      if (shared_.logger) shared_.logger->warn("event=shutdown_grace_expired");
      ioc_.stop();
      return;
    }
    drain_timer_.expires_after(std::chrono::milliseconds(20));
    drain_timer_.async_wait([this](beast::error_code ec) {
      if (!ec) drain();
    });
  }

  Shared shared_;
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  net::signal_set signals_;
  net::steady_timer drain_timer_;
  unsigned short port_ = 0;
  std::chrono::steady_clock::time_point shutdown_started_;
};

HttpServer::HttpServer(ListeningSocket socket, Router& router, ClaimWaiters& waiters,
                       GroupCommit& group_commit, ServerMetrics& metrics, HttpServerOptions options,
                       std::shared_ptr<spdlog::logger> logger)
    : impl_(std::make_unique<Impl>(std::move(socket), router, waiters, group_commit, metrics,
                                   std::move(options), std::move(logger))) {}
HttpServer::~HttpServer() = default;
unsigned short HttpServer::port() const { return impl_->port(); }
void HttpServer::run() { impl_->run(); }
void HttpServer::stop() { impl_->stop(); }

}  // namespace fedleaf::server
