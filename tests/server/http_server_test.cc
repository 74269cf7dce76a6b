// HttpServer over the narrow interfaces it is handed (RequestHandler, ClaimParking, CommitGate):
// an answer that waits for a commit is written only as the gate releases it, a failed commit
// becomes 503, and a parked claim is handled again when its wake-up runs. Fakes stand in for the
// Router, ClaimWaiters and GroupCommit: the adapter needs nothing else of the server.
#include "server/http/http_server.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace fedleaf::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// Waits (untimed: the test checks order, never time) until `ready` holds under `mutex`.
template <class Ready>
void wait_until(std::mutex& mutex, std::condition_variable& cv, Ready ready) {
  std::unique_lock lock(mutex);
  cv.wait(lock, ready);
}

struct FakeHandler final : RequestHandler {
  Response handle(Request& request) const override {
    Response response = Response::json(200, "\"" + request.path() + "\"");
    if (request.path() == "/commit") response.send_after = SendAfter::kCommit;
    if (request.path() == "/sync") response.send_after = SendAfter::kSync;
    if (request.path() == "/claim") {
      response.status = 204;
      response.wait = ClaimWait{"p", 3, 30};
      response.send_after = SendAfter::kCommit;  // as the router answers every claim
    }
    return response;
  }
  Response handle_woken(Request& request) const override {
    return Response::json(200, "\"woken " + request.path() + "\"");
  }
  void release_undelivered(const HandedLease&) const override {}
};

struct FakeGate final : CommitGate {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::pair<bool, Release>> waiting;  // (durable, release)
  void after_commit(Release release) override { add(false, std::move(release)); }
  void after_durable(Release release) override { add(true, std::move(release)); }
  void add(bool durable, Release release) {
    std::lock_guard lock(mutex);
    waiting.emplace_back(durable, std::move(release));
    cv.notify_all();
  }
  // Runs the i-th release once and drops it, as GroupCommit does: a release holds its session.
  void release(std::size_t i, bool ok) {
    Release r;
    {
      std::lock_guard lock(mutex);
      r = std::exchange(waiting[i].second, nullptr);
    }
    r(ok);
  }
};

struct FakeParking final : ClaimParking {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::tuple<std::string, std::uint64_t, Wake>> parked;
  std::uint64_t park(const std::string& population, std::uint64_t seen_epoch, Wake wake) override {
    std::lock_guard lock(mutex);
    parked.emplace_back(population, seen_epoch, std::move(wake));
    cv.notify_all();
    return parked.size();
  }
  bool cancel(const std::string&, std::uint64_t) override { return false; }
};

struct RunningServer {
  FakeHandler handler;
  FakeParking parking;
  FakeGate gate;
  ServerMetrics metrics;
  HttpServer server{ListeningSocket("127.0.0.1", 0), handler, parking, gate, metrics, {}, nullptr};
  std::thread thread{[this] { server.run(); }};
  ~RunningServer() {
    server.stop();
    thread.join();
  }
};

struct Client {
  net::io_context ioc;
  net::ip::tcp::socket socket{ioc};
  beast::flat_buffer buffer;
  explicit Client(unsigned short port) {
    socket.connect({net::ip::make_address("127.0.0.1"), port});
  }
  void send(const std::string& target) {
    http::request<http::string_body> request{http::verb::post, target, 11};
    request.set(http::field::host, "127.0.0.1");
    request.prepare_payload();
    http::write(socket, request);
  }
  http::response<http::string_body> receive() {
    http::response<http::string_body> response;
    http::read(socket, buffer, response);
    return response;
  }
};

TEST_CASE("http_server_writes_an_answer_once_its_commit_gate_releases_it", "[http_server]") {
  RunningServer running;
  Client client(running.server.port());
  client.send("/commit");
  wait_until(running.gate.mutex, running.gate.cv, [&] { return running.gate.waiting.size() == 1; });
  CHECK_FALSE(running.gate.waiting[0].first);  // a claim's answer waits for the commit only
  running.gate.release(0, true);
  const auto committed = client.receive();
  CHECK(committed.result_int() == 200);
  CHECK(committed.body() == "\"/commit\"");

  client.send("/sync");
  wait_until(running.gate.mutex, running.gate.cv, [&] { return running.gate.waiting.size() == 2; });
  CHECK(running.gate.waiting[1].first);  // an upload's answer waits for the sync too
  running.gate.release(1, false);
  const auto failed = client.receive();
  CHECK(failed.result_int() == 503);
  CHECK(failed.body().find("could not commit") != std::string::npos);
}

TEST_CASE("http_server_parks_a_waiting_claim_until_its_wake_up_runs", "[http_server]") {
  RunningServer running;
  Client client(running.server.port());
  client.send("/claim");
  wait_until(running.parking.mutex, running.parking.cv,
             [&] { return running.parking.parked.size() == 1; });
  const auto& [population, epoch, wake] = running.parking.parked[0];
  CHECK(population == "p");
  CHECK(epoch == 3);
  wake();
  const auto woken = client.receive();
  CHECK(woken.result_int() == 200);
  CHECK(woken.body() == "\"woken /claim\"");
}

// What the claim's handling wrote to the open batch (a round it closed on a shared store) is
// committed while the claim sleeps: a commit asked for by nobody left another server waiting on
// the round's rows until the next request reached this one (bench smoke, 3 servers on
// PostgreSQL: a status request timed out behind haproxy after 60 s).
TEST_CASE("http_server_asks_for_a_commit_when_it_parks_a_claim", "[http_server]") {
  RunningServer running;
  Client client(running.server.port());
  client.send("/claim");
  wait_until(running.parking.mutex, running.parking.cv,
             [&] { return running.parking.parked.size() == 1; });
  {
    // Asked for before the claim parks (so already here, no wait).
    std::lock_guard lock(running.gate.mutex);
    REQUIRE(running.gate.waiting.size() == 1);
    CHECK_FALSE(running.gate.waiting[0].first);  // a commit, no sync
  }
  running.gate.release(0, true);  // answers nothing: the claim is still parked
  std::get<2>(running.parking.parked[0])();
  const auto woken = client.receive();
  CHECK(woken.result_int() == 200);
}

}  // namespace
}  // namespace fedleaf::server
