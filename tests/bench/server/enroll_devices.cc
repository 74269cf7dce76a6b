// enroll_devices: enrolls N devices of a private population through the server's enrollment
// endpoint (POST /v1/populations/{p}/devices with the client token), C at a time on keep-alive
// connections, and writes their credentials one per line: the devices server_load's
// --devices-file claims with (scripts/bench/server.sh, the private population). Prints one JSON
// object: enrolled, seconds, enrollments_per_s, errors by kind.
//
//   enroll_devices --port 8080 --population bench --token T --count 1000000 --out devices.txt
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/bench/server/server_connection.h"

using namespace fedleaf::bench;

namespace {

struct Options {
  ServerOptions server;
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
      : o_(o), shared_(shared), connection_(ioc, o.server) {}

  void start() {
    connection_.connect([self = shared_from_this()](const char* error) {
      if (error != nullptr) return self->fail(error);
      self->next();
    });
  }

 private:
  void next() {
    if (shared_.started >= o_.count) return connection_.close();
    ++shared_.started;
    connection_.request(http::verb::post, "/v1/populations/" + o_.server.population + "/devices",
                        o_.server.token);
    connection_.exchange([self = shared_from_this()](const char* error) {
      if (error != nullptr) return self->fail(error);
      self->on_answer();
    });
  }

  void on_answer() {
    const auto& res = connection_.response();
    const int status = res.result_int();
    if (status == 201 || status == 200) {
      const auto body = nlohmann::json::parse(res.body(), nullptr, false);
      if (body.is_object() && body.contains("credential") && body["credential"].is_string()) {
        shared_.credentials.push_back(body["credential"].get<std::string>());
      } else {
        ++shared_.errors["no_credential"];
      }
    } else {
      ++shared_.errors["status_" + std::to_string(status)];
      if (shared_.errors["status_" + std::to_string(status)] == 1) {
        std::cerr << "enroll_devices: " << status << " " << res.body() << "\n";
      }
    }
    next();
  }

  void fail(const char* what) {
    ++shared_.errors[what];
    connection_.close();
  }

  const Options& o_;
  Shared& shared_;
  ServerConnection connection_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (o.server.parse_option(k, v)) continue;
    if (k == "--count")
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
  if (o.out.empty() || o.server.population.empty() || o.count < 1) {
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
