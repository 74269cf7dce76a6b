// server_load: C simulated leaves on loopback, each on its own keep-alive connection, doing
// claim → upload (a small sparse train result) → claim … against a running fedleaf-server.
// Bounded in count (--max-cycles) and time (--duration-s). Prints one JSON object: cycles/s,
// claims/s, uploads/s, latency percentiles, errors by kind.
//
//   server_load --port 8080 --population bench --token T --concurrency 500 --duration-s 10
//
// Claims long-poll as runLeaf's do (--wait-s, default 20: the claim body {"wait_s": 20}): a
// claim with nothing to lease (the last tasks of a round are out) is parked by the server until
// a task appears (the next round opens, a lease is given back) or the wait ends. A 204 is not
// an error: after a long poll the leaf waits the server's Fedleaf-Retry-After-Ms, as a leaf
// does; with --wait-s 0 (a polling leaf) it waits --retry-ms (not the 1 s of Retry-After,
// which would idle it for most of a round) and claims again. 204s are counted separately.
//
// --think-ms T (default 0: the closed loop, each leaf claims again the moment its upload
// is answered) makes each leaf wait between its task and its upload, as a leaf that trains: a
// time drawn uniformly from [T/2, 3T/2] (devices differ), so the offered load is about
// C / (T + latency) cycles/s instead of whatever the server can take, and latency is measured
// below saturation rather than as queueing behind C requests.
//
// --devices-file F (a private population, credentials from enroll_devices): each claim carries
// the next unused device's credential (Fedleaf-Device), so the server looks up and records that
// device's participation on every claim; a device that got a task is not used again, one whose
// claim was answered 204 claims again.
#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/wire/safetensors.h"
#include "tests/bench/server/server_connection.h"

using namespace fedleaf::bench;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  ServerOptions server;
  int concurrency = 50;
  double duration_s = 10;
  // Connections open and traffic flows during the warm-up, but nothing is recorded: a burst of
  // C simultaneous connects overflows the accept queue and costs SYN retransmits (1-3 s).
  double warmup_s = 2;
  long max_cycles = 1'000'000;
  int retry_ms = 5;
  double wait_s = 20;
  int think_ms = 0;
  int vocab = 20000;
  int dim = 8;
  int rows = 8;
  std::string devices_file;
};

// The enrolled devices' credentials, handed out one per task.
struct Devices {
  std::vector<std::string> credentials;
  std::size_t next = 0;
  bool enabled() const { return !credentials.empty(); }
  // "" once every device was used.
  std::string take() { return next < credentials.size() ? credentials[next++] : std::string(); }
};

struct Stats {
  Clock::time_point recording_from;
  // A request is recorded when it started after the warm-up.
  bool recording(Clock::time_point started) const { return started >= recording_from; }
  long cycles = 0;
  long claims = 0;
  long uploads = 0;
  long no_task = 0;
  std::map<std::string, long> errors;
  std::vector<float> claim_ms;
  std::vector<float> upload_ms;
};

// A train result as a leaf sends it: `rows` rows of emb/weight (row_sparse), out/weight dense.
std::string make_result(const Options& o, std::mt19937& rng) {
  std::vector<std::int64_t> picked;
  std::uniform_int_distribution<std::int64_t> row(0, o.vocab - 1);
  while (static_cast<int>(picked.size()) < o.rows) {
    const auto r = row(rng);
    if (std::find(picked.begin(), picked.end(), r) == picked.end()) picked.push_back(r);
  }
  std::sort(picked.begin(), picked.end());
  fedleaf::core::RowIndices idx = fedleaf::core::RowIndices::from_shape({picked.size()});
  for (std::size_t i = 0; i < picked.size(); ++i) idx(i) = picked[i];
  auto values = fedleaf::core::DenseTensor::zeros(fedleaf::core::DType::F32,
                                                  {picked.size(), static_cast<std::size_t>(o.dim)});
  std::uniform_real_distribution<float> v(-0.01f, 0.01f);
  for (std::size_t i = 0; i < values.size(); ++i) values.data<float>()[i] = v(rng);
  auto dense = fedleaf::core::DenseTensor::zeros(fedleaf::core::DType::F32,
                                                 {static_cast<std::size_t>(o.dim), 2});
  for (std::size_t i = 0; i < dense.size(); ++i) dense.data<float>()[i] = v(rng);
  fedleaf::core::NamedTensors t;
  t.emplace("emb/weight", fedleaf::core::RowSparseTensor(idx, std::move(values), {o.vocab, o.dim}));
  t.emplace("out/weight", std::move(dense));
  auto bytes = fedleaf::core::write_safetensors(
      t, {{"kind", "train"}, {"num_examples", "16"}, {"loss", "0.69"}});
  return std::string(bytes.begin(), bytes.end());
}

class Leaf : public std::enable_shared_from_this<Leaf> {
 public:
  Leaf(net::io_context& ioc, const Options& o, Stats& stats, Devices& devices, std::string result,
       Clock::time_point end, unsigned seed)
      : ioc_(ioc),
        o_(o),
        stats_(stats),
        devices_(devices),
        connection_(ioc, o.server),
        timer_(ioc),
        result_(std::move(result)),
        end_(end),
        rng_(seed) {}

  void start() {
    connection_.connect([self = shared_from_this()](const char* error) {
      if (error != nullptr) return self->fail(error);
      self->claim();
    });
  }

 private:
  bool finished() const { return Clock::now() >= end_ || stats_.cycles >= o_.max_cycles; }

  void send(http::verb verb, const std::string& target, const std::string& token, std::string body,
            void (Leaf::*on_done)()) {
    auto& req = connection_.request(verb, target, token);
    if (on_done == &Leaf::on_claim && !device_.empty()) req.set("Fedleaf-Device", device_);
    req.body() = std::move(body);
    started_ = Clock::now();
    connection_.exchange([self = shared_from_this(), on_done](const char* error) {
      if (error != nullptr) return self->fail(error);
      ((*self).*on_done)();
    });
  }

  float elapsed_ms() const {
    return std::chrono::duration<float, std::milli>(Clock::now() - started_).count();
  }

  void claim() {
    if (finished()) return close();
    if (devices_.enabled() && device_.empty()) {
      device_ = devices_.take();
      if (device_.empty()) {
        ++stats_.errors["devices_used_up"];
        return close();
      }
    }
    send(http::verb::post, "/v1/populations/" + o_.server.population + "/tasks:claim",
         o_.server.token,
         o_.wait_s > 0 ? nlohmann::json{{"wait_s", o_.wait_s}}.dump() : std::string(),
         &Leaf::on_claim);
  }

  void on_claim() {
    const bool record = stats_.recording(started_);
    if (record) stats_.claim_ms.push_back(elapsed_ms());
    const int status = connection_.response().result_int();
    if (status == 204) {
      if (record) ++stats_.no_task;
      int retry_ms = o_.retry_ms;
      const auto& res = connection_.response();
      const auto hinted = res.find("Fedleaf-Retry-After-Ms");
      if (o_.wait_s > 0 && hinted != res.end()) retry_ms = std::stoi(std::string(hinted->value()));
      timer_.expires_after(std::chrono::milliseconds(retry_ms));
      timer_.async_wait([self = shared_from_this()](beast::error_code) { self->claim(); });
      return;
    }
    if (status != 200) {
      ++stats_.errors["claim_" + std::to_string(status)];
      device_.clear();
      return claim();
    }
    device_.clear();
    if (record) ++stats_.claims;
    const auto task = nlohmann::json::parse(connection_.response().body());
    upload_url_ = task["upload_url"].get<std::string>();
    lease_token_ = task["lease_token"].get<std::string>();
    if (o_.think_ms <= 0) return upload();
    std::uniform_int_distribution<int> think(o_.think_ms / 2, o_.think_ms * 3 / 2);
    timer_.expires_after(std::chrono::milliseconds(think(rng_)));
    timer_.async_wait([self = shared_from_this()](beast::error_code) { self->upload(); });
  }

  void upload() { send(http::verb::put, upload_url_, lease_token_, result_, &Leaf::on_upload); }

  void on_upload() {
    const bool record = stats_.recording(started_);
    if (record) stats_.upload_ms.push_back(elapsed_ms());
    const int status = connection_.response().result_int();
    if (status == 201) {
      if (record) {
        ++stats_.uploads;
        ++stats_.cycles;
      }
      // The last cycle ends the run: leaves parked in a long poll would wait for a round that
      // no longer fills.
      if (stats_.cycles >= o_.max_cycles) return ioc_.stop();
    } else {
      ++stats_.errors["upload_" + std::to_string(status)];
    }
    claim();
  }

  void fail(const char* what) {
    ++stats_.errors[what];
    close();
  }
  void close() { connection_.close(); }

  net::io_context& ioc_;
  const Options& o_;
  Stats& stats_;
  Devices& devices_;
  std::string device_;  // the credential this leaf claims with ("" without --devices-file)
  ServerConnection connection_;
  net::steady_timer timer_;
  std::string result_;
  std::string upload_url_;
  std::string lease_token_;
  Clock::time_point end_;
  Clock::time_point started_;
  std::mt19937 rng_;  // think times
};

double percentile(std::vector<float> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (o.server.parse_option(k, v)) continue;
    if (k == "--concurrency")
      o.concurrency = std::stoi(v);
    else if (k == "--duration-s")
      o.duration_s = std::stod(v);
    else if (k == "--warmup-s")
      o.warmup_s = std::stod(v);
    else if (k == "--max-cycles")
      o.max_cycles = std::stol(v);
    else if (k == "--retry-ms")
      o.retry_ms = std::stoi(v);
    else if (k == "--wait-s")
      o.wait_s = std::stod(v);
    else if (k == "--think-ms")
      o.think_ms = std::stoi(v);
    else if (k == "--vocab")
      o.vocab = std::stoi(v);
    else if (k == "--dim")
      o.dim = std::stoi(v);
    else if (k == "--rows")
      o.rows = std::stoi(v);
    else if (k == "--devices-file")
      o.devices_file = v;
    else {
      std::cerr << "unknown option " << k << "\n";
      return 2;
    }
  }
  Devices devices;
  if (!o.devices_file.empty()) {
    std::ifstream in(o.devices_file);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) devices.credentials.push_back(line);
    }
    if (devices.credentials.empty()) {
      std::cerr << "server_load: no credentials in " << o.devices_file << "\n";
      return 2;
    }
  }
  net::io_context ioc(1);
  Stats stats;
  std::mt19937 rng(7);
  const auto start = Clock::now();
  const auto begin = start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(o.warmup_s));
  stats.recording_from = begin;
  std::size_t result_bytes = 0;
  const auto end = begin + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(o.duration_s));
  for (int i = 0; i < o.concurrency; ++i) {
    std::string result = make_result(o, rng);
    result_bytes = result.size();
    std::make_shared<Leaf>(ioc, o, stats, devices, std::move(result), end, static_cast<unsigned>(i))
        ->start();
  }
  // The run ends on time even with claims parked in a long poll (up to --wait-s): whatever is
  // in flight then is abandoned, not counted.
  net::steady_timer stop(ioc);
  stop.expires_at(end);
  stop.async_wait([&ioc](beast::error_code) { ioc.stop(); });
  ioc.run();
  const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  std::vector<float> all = stats.claim_ms;
  all.insert(all.end(), stats.upload_ms.begin(), stats.upload_ms.end());
  long errors = 0;
  for (const auto& [kind, n] : stats.errors) errors += n;
  nlohmann::json out = {{"concurrency", o.concurrency},
                        {"think_ms", o.think_ms},
                        {"wait_s", o.wait_s},
                        {"seconds", seconds},
                        {"cycles", stats.cycles},
                        {"cycles_per_s", static_cast<double>(stats.cycles) / seconds},
                        {"claims_per_s", static_cast<double>(stats.claims) / seconds},
                        {"uploads_per_s", static_cast<double>(stats.uploads) / seconds},
                        {"no_task_204", stats.no_task},
                        {"p50_ms", percentile(all, 0.50)},
                        {"p99_ms", percentile(all, 0.99)},
                        {"claim_p99_ms", percentile(stats.claim_ms, 0.99)},
                        {"upload_p50_ms", percentile(stats.upload_ms, 0.50)},
                        {"upload_p99_ms", percentile(stats.upload_ms, 0.99)},
                        {"errors", errors},
                        {"errors_by_kind", stats.errors},
                        {"upload_body_bytes", result_bytes},
                        {"devices_used", devices.next}};
  std::cout << out.dump() << std::endl;
  return 0;
}
