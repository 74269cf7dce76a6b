// The HTTP side of the server benches' clients (server_load, enroll_devices): where the server is
// and who the client is (ServerOptions, from the command line), and one keep-alive HTTP/1.1
// connection carrying one request at a time (ServerConnection), on the caller's io_context.
//
//   ServerConnection conn(ioc, options);
//   conn.connect([self](const char* error) { ... });   // error: nullptr, or "connect"
//   conn.request(http::verb::post, "/v1/populations/p/devices", options.token);
//   conn.exchange([self](const char* error) { ... });  // then conn.response(); or "write"/"read"
//
// The callbacks hold their owner (a shared_ptr to the object holding the connection), which
// keeps the connection alive until they run.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <string>
#include <utility>

#include "core/version.h"

namespace fedleaf::bench {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct ServerOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 8080;
  std::string population;
  std::string token;
  // Fedleaf-Version: this build's MAJOR.MINOR (CMake's project version), unless --version says.
  std::string version =
      std::to_string(fedleaf::kVersionMajor) + "." + std::to_string(fedleaf::kVersionMinor);

  // Takes --host, --port, --population, --token or --version; false for any other option.
  bool parse_option(const std::string& key, const std::string& value);
};

class ServerConnection {
 public:
  ServerConnection(net::io_context& ioc, const ServerOptions& server)
      : server_(server), stream_(ioc) {}

  // Connects to the server; then done(nullptr), or done("connect").
  template <class Done>
  void connect(Done done) {
    const tcp::endpoint ep(net::ip::make_address(server_.host), server_.port);
    stream_.async_connect(ep, [done = std::move(done)](beast::error_code ec) mutable {
      done(ec ? "connect" : nullptr);
    });
  }

  // The next request, made anew: `verb` `target` with Host, "Authorization: Bearer <token>" and
  // Fedleaf-Version; the caller may add headers and a body before exchange().
  http::request<http::string_body>& request(http::verb verb, const std::string& target,
                                            const std::string& token);

  // Sends the request and reads the answer into response(); then done(nullptr), or done("write")
  // or done("read").
  template <class Done>
  void exchange(Done done) {
    req_.prepare_payload();
    http::async_write(
        stream_, req_, [this, done = std::move(done)](beast::error_code ec, std::size_t) mutable {
          if (ec) return done("write");
          res_ = {};
          http::async_read(stream_, buffer_, res_,
                           [done = std::move(done)](beast::error_code rec, std::size_t) mutable {
                             done(rec ? "read" : nullptr);
                           });
        });
  }

  const http::response<http::string_body>& response() const { return res_; }

  void close();

 private:
  const ServerOptions& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  http::response<http::string_body> res_;
};

}  // namespace fedleaf::bench
