// enroll_devices: enrolls N devices of a private population through the server's enrollment
// endpoint (POST /v1/populations/{p}/devices with the client token), C at a time on keep-alive
// connections, and writes their credentials one per line: the devices server_load's
// --devices-file claims with (scripts/bench/server.sh, the private population). Prints one JSON
// object: enrolled, seconds, enrollments_per_s, errors by kind.
//
//   enroll_devices --port 8080 --population bench --token T --count 1000000 --out devices.txt
#include <boost/asio/connect.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/version.h"

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

struct Options {
  std::string host = "127.0.0.1";
  unsigned short port = 8080;
  std::string population;
  std::string token;
  std::string version =
      std::to_string(fedleaf::kVersionMajor) + "." + std::to_string(fedleaf::kVersionMinor);
  long count = 1000;
  int concurrency = 32;
  std::string out;
};

struct Shared {
  long started = 0;
  std::vector<std::string> credentials;
  std::map<std::string, long> errors;
};

class Enroller : public std::enable_shared_from_this<Enroller> {
 public:
  Enroller(net::io_context& ioc, const Options& o, Shared& shared)
      : o_(o), shared_(shared), stream_(ioc) {}

  void start() {
    tcp::endpoint ep(net::ip::make_address(o_.host), o_.port);
    stream_.async_connect(ep, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->fail("connect");
      self->next();
    });
  }

 private:
  void next() {
    if (shared_.started >= o_.count) return close();
    ++shared_.started;
    req_ = {};
    req_.method(http::verb::post);
    req_.target("/v1/populations/" + o_.population + "/devices");
    req_.version(11);
    req_.set(http::field::host, o_.host);
    req_.set(http::field::authorization, "Bearer " + o_.token);
    req_.set("Fedleaf-Version", o_.version);
    req_.prepare_payload();
    http::async_write(stream_, req_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec) return self->fail("write");
                        self->res_ = {};
                        http::async_read(self->stream_, self->buffer_, self->res_,
                                         [self](beast::error_code rec, std::size_t) {
                                           if (rec) return self->fail("read");
                                           self->on_answer();
                                         });
                      });
  }

  void on_answer() {
    const int status = res_.result_int();
    if (status == 201 || status == 200) {
      const auto body = nlohmann::json::parse(res_.body(), nullptr, false);
      if (body.is_object() && body.contains("credential") && body["credential"].is_string()) {
        shared_.credentials.push_back(body["credential"].get<std::string>());
      } else {
        ++shared_.errors["no_credential"];
      }
    } else {
      ++shared_.errors["status_" + std::to_string(status)];
      if (shared_.errors["status_" + std::to_string(status)] == 1) {
        std::cerr << "enroll_devices: " << status << " " << res_.body() << "\n";
      }
    }
    next();
  }

  void fail(const char* what) {
    ++shared_.errors[what];
    close();
  }
  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  const Options& o_;
  Shared& shared_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::empty_body> req_;
  http::response<http::string_body> res_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--host")
      o.host = v;
    else if (k == "--port")
      o.port = static_cast<unsigned short>(std::stoi(v));
    else if (k == "--population")
      o.population = v;
    else if (k == "--token")
      o.token = v;
    else if (k == "--version")
      o.version = v;
    else if (k == "--count")
      o.count = std::stol(v);
    else if (k == "--concurrency")
      o.concurrency = std::stoi(v);
    else if (k == "--out")
      o.out = v;
    else {
      std::cerr << "unknown option " << k << "\n";
      return 2;
    }
  }
  if (o.out.empty() || o.population.empty() || o.count < 1) {
    std::cerr << "enroll_devices: --population, --token, --count >= 1 and --out are required\n";
    return 2;
  }
  net::io_context ioc(1);
  Shared shared;
  shared.credentials.reserve(static_cast<std::size_t>(o.count));
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.concurrency; ++i) std::make_shared<Enroller>(ioc, o, shared)->start();
  ioc.run();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ofstream out(o.out);
  for (const auto& c : shared.credentials) out << c << '\n';
  out.close();
  if (!out) {
    std::cerr << "enroll_devices: cannot write " << o.out << "\n";
    return 1;
  }
  const auto enrolled = static_cast<long>(shared.credentials.size());
  std::cout << nlohmann::json{{"enrolled", enrolled},
                              {"seconds", seconds},
                              {"enrollments_per_s", static_cast<double>(enrolled) / seconds},
                              {"errors", shared.errors}}
                   .dump()
            << std::endl;
  return enrolled == o.count ? 0 : 1;
}
