#include "server/http/http_server.h"

#include <algorithm>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <thread>
#include <vector>

#include "core/error.h"
#include "server/http/http_session.h"

namespace fedleaf::server {

class HttpServer::Impl {
 public:
  Impl(ListeningSocket socket, const RequestHandler& handler, ClaimParking& parking,
       CommitGate& commit_gate, ServerMetrics& metrics, HttpServerOptions options,
       std::shared_ptr<spdlog::logger> logger)
      : shared_(handler, parking, commit_gate, metrics, std::move(options), std::move(logger)),
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
        steady_seconds(shared_.options.shutdown_grace_s)) {
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

HttpServer::HttpServer(ListeningSocket socket, const RequestHandler& handler, ClaimParking& parking,
                       CommitGate& commit_gate, ServerMetrics& metrics, HttpServerOptions options,
                       std::shared_ptr<spdlog::logger> logger)
    : impl_(std::make_unique<Impl>(std::move(socket), handler, parking, commit_gate, metrics,
                                   std::move(options), std::move(logger))) {}
HttpServer::~HttpServer() = default;
unsigned short HttpServer::port() const { return impl_->port(); }
void HttpServer::run() { impl_->run(); }
void HttpServer::stop() { impl_->stop(); }

}  // namespace fedleaf::server
