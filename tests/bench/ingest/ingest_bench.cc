// ingest_bench: the server's CPU per accepted megabyte and per published model against a floor
// for the same bytes measured in the same run (scripts/bench.sh ingest).
//
//   ingest_bench --port P --server-pid PID --ingest-token T --publish-token U --work-dir D
//
// The server runs two populations of the demo plan (scripts/demo/spam_plan.json): "ingest",
// whose round never fills (clients_per_round 1e6), so its uploads are accepted and never
// published, and "publish", whose rounds close every --clients-per-round uploads. One keep-alive
// connection claims and uploads as fast as the server answers, no training: the uploads are
// demo-sized (--rows embedding rows, int8 values and delta_varint ids as the plan asks) and built
// once with the core's result writer (result_metadata + write_safetensors), one per simulated
// leaf.
//
// Method. After a warm-up (one segment of each kind, not recorded), --pairs times:
//   A  server ingest:  N uploads to "ingest"; server CPU (utime + stime of /proc/PID/stat)
//                      before and after, per accepted MB (claims included: a leaf needs both)
//   B  floor ingest:   the same N bodies, in this process (CPU of this thread, getrusage):
//                      memcpy, sha256, the fold of the decoded update into SparseSumAccumulators
//                      of the plan's shapes, write + fdatasync of the bytes to --work-dir
//   A' server publish: R rounds of "publish"; server CPU minus the uploads' share at the
//                      CPU per upload of the A just before, per published model
//   B' floor publish:  per model: memcpy, sha256, write + fdatasync of the model's bytes
// so server and floor alternate (A B A' B') and drift on a shared machine hits both. Ratios are
// medians over the pairs of floor / server, with their min and max. The server's own step
// timings (fedleaf_phase_seconds of /metrics, wall time per step) give the breakdown.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/aggregation/accumulator/sparse_sum_accumulator.h"
#include "core/aggregation/operators/update_encoding.h"
#include "core/version.h"
#include "core/wire/result_format.h"
#include "core/wire/safetensors.h"
#include "core/wire/update_compression.h"
#include "server/util/sha256.h"

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;
using nlohmann::json;
namespace core = fedleaf::core;

namespace {

struct Options {
  unsigned short port = 0;
  int server_pid = 0;
  std::string ingest_token, publish_token;
  std::string version =
      std::to_string(fedleaf::kVersionMajor) + "." + std::to_string(fedleaf::kVersionMinor);
  std::string work_dir = "/tmp";
  std::string out;
  int vocab = 262144, dim = 16, units = 2;
  int rows = 15000;  // ~332 kB int8 uploads: the demo's 5.32 MB per round of 16 leaves
  int leaves = 16;
  int clients_per_round = 16;
  int uploads = 160;  // per ingest segment
  int rounds = 4;     // per publish segment
  int pairs = 5;
};

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double thread_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// utime + stime of a process (all its threads, living and exited), in seconds.
double process_cpu_s(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // after "pid (comm) "
  std::string f;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(f);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// One leaf's train result as the demo plan asks for it: `rows` distinct embedding rows (int8
// values, delta_varint ids), out/weight and out/bias dense (int8 values).
std::vector<std::uint8_t> make_upload(const Options& o, std::mt19937& rng) {
  std::vector<std::int64_t> picked;
  std::uniform_int_distribution<std::int64_t> row(0, o.vocab - 1);
  std::vector<bool> used(static_cast<std::size_t>(o.vocab));
  while (static_cast<int>(picked.size()) < o.rows) {
    const auto r = row(rng);
    if (!used[static_cast<std::size_t>(r)]) picked.push_back(r);
    used[static_cast<std::size_t>(r)] = true;
  }
  std::sort(picked.begin(), picked.end());
  const auto n = picked.size();
  const auto dim = static_cast<std::size_t>(o.dim), units = static_cast<std::size_t>(o.units);
  core::RowIndices idx = core::RowIndices::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) idx(i) = picked[i];
  std::uniform_real_distribution<float> v(-0.01f, 0.01f);
  auto fill = [&](core::DenseTensor& t) {
    for (std::size_t i = 0; i < t.size(); ++i) t.data<float>()[i] = v(rng);
  };
  auto values = core::DenseTensor::zeros(core::DType::F32, {n, dim});
  auto weight = core::DenseTensor::zeros(core::DType::F32, {dim, units});
  auto bias = core::DenseTensor::zeros(core::DType::F32, {units});
  fill(values);
  fill(weight);
  fill(bias);
  core::NamedTensors t;
  t.emplace("emb/weight", core::RowSparseTensor(idx, std::move(values),
                                                {o.vocab, static_cast<std::int64_t>(dim)}));
  t.emplace("out/weight", std::move(weight));
  t.emplace("out/bias", std::move(bias));
  const core::Metadata meta =
      core::result_metadata({core::ResultKind::kTrain, 300, 0.35, 0.9, std::nullopt, ""});
  const core::TensorCompression int8{core::ValuesCompression::kInt8, core::IdsCompression::kI64};
  return core::write_safetensors(
      t, meta,
      {{"emb/weight", {core::ValuesCompression::kInt8, core::IdsCompression::kDeltaVarint}},
       {"out/weight", int8},
       {"out/bias", int8}});
}

// A blocking HTTP/1.1 client on one keep-alive connection.
class Client {
 public:
  Client(net::io_context& ioc, const Options& o) : o_(o), stream_(ioc) {
    stream_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), o.port));
  }
  http::response<http::string_body> send(http::verb verb, const std::string& target,
                                         const std::string& token, std::string body) {
    http::request<http::string_body> req{verb, target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    req.set("Fedleaf-Version", o_.version);
    req.body() = std::move(body);
    req.prepare_payload();
    http::write(stream_, req);
    http::response<http::string_body> res;
    http::read(stream_, buffer_, res);
    return res;
  }

 private:
  const Options& o_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
};

struct Population {
  std::string id, token;
};

// Claims a task of `p` and uploads `body`; retries a claim answered 204 (the round is closing).
void claim_and_upload(Client& c, const Population& p, const std::string& body) {
  for (int attempt = 0;; ++attempt) {
    auto res = c.send(http::verb::post, "/v1/populations/" + p.id + "/tasks:claim", p.token, "");
    if (res.result_int() == 204) {
      if (attempt > 10000) throw std::runtime_error("no task to claim for 10000 attempts");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      continue;
    }
    if (res.result_int() != 200) throw std::runtime_error("claim: " + res.body());
    const auto task = json::parse(res.body());
    auto up = c.send(http::verb::put, task["upload_url"].get<std::string>(),
                     task["lease_token"].get<std::string>(), body);
    if (up.result_int() != 201) throw std::runtime_error("upload: " + up.body());
    return;
  }
}

int population_round(Client& c, const Population& p) {
  return json::parse(c.send(http::verb::get, "/v1/populations/" + p.id, "", "").body())["round"];
}

// fedleaf_phase_seconds_{sum,count} by phase, from /metrics.
std::map<std::string, std::pair<double, double>> phases(Client& c) {
  std::map<std::string, std::pair<double, double>> out;
  std::istringstream lines(c.send(http::verb::get, "/metrics", "", "").body());
  std::string line;
  for (const std::string prefix :
       {"fedleaf_phase_seconds_sum{phase=\"", "fedleaf_phase_seconds_count{phase=\""}) {
    lines.clear();
    lines.seekg(0);
    while (std::getline(lines, line)) {
      if (line.rfind(prefix, 0) != 0) continue;
      const auto end = line.find('"', prefix.size());
      const std::string phase = line.substr(prefix.size(), end - prefix.size());
      const double value = std::stod(line.substr(line.rfind(' ') + 1));
      (prefix.find("_sum") != std::string::npos ? out[phase].first : out[phase].second) = value;
    }
  }
  return out;
}

// write + fdatasync of `size` bytes appended to an open file: what recording them durably costs.
void append_durably(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n <= 0) throw std::runtime_error("floor: write failed");
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  if (fdatasync(fd) != 0) throw std::runtime_error("floor: fdatasync failed");
}

struct Floor {
  std::vector<std::uint8_t> buffer;
  volatile std::uint8_t sink = 0;  // keeps the hashes and copies from being optimised away
  int fd = -1;
};

// The floor of accepting `uploads`: memcpy, sha256, fold, durable append, CPU of this thread.
double floor_ingest_s(const Options& o, Floor& f, const std::vector<std::string>& bodies,
                      const std::vector<core::SafetensorsFile>& decoded, int uploads) {
  const double start = thread_cpu_s();
  std::vector<core::SparseSumAccumulator> accs;
  auto fresh = [&] {
    accs.clear();
    for (const auto& [name, tensor] : decoded[0].tensors) {
      core::DenseShape shape;
      core::UpdateEncoding enc = core::update_encoding_of(tensor);
      if (name == "emb/weight") {
        shape = {o.vocab, o.dim};
      } else {
        for (std::size_t d : std::get<core::DenseTensor>(tensor).shape())
          shape.push_back(static_cast<std::int64_t>(d));
      }
      accs.emplace_back(name, core::OperatorSpec{}, enc, core::DType::F32, shape);
    }
  };
  fresh();
  for (int i = 0; i < uploads; ++i) {
    const std::size_t k = static_cast<std::size_t>(i % o.leaves);
    const std::string& body = bodies[k];
    f.buffer.resize(body.size());
    std::memcpy(f.buffer.data(), body.data(), body.size());
    f.sink = f.sink + fedleaf::server::sha256(f.buffer.data(), f.buffer.size())[0];
    if (i % o.clients_per_round == 0) fresh();
    for (auto& acc : accs) acc.add(decoded[k].tensors.at(acc.name()), 300.0);
    append_durably(f.fd, f.buffer.data(), f.buffer.size());
  }
  return thread_cpu_s() - start;
}

// The floor of publishing `models` models of `model_bytes`: memcpy, sha256, durable write.
double floor_publish_s(Floor& f, const std::vector<std::uint8_t>& model, int models) {
  const double start = thread_cpu_s();
  for (int i = 0; i < models; ++i) {
    f.buffer.resize(model.size());
    std::memcpy(f.buffer.data(), model.data(), model.size());
    f.sink = f.sink + fedleaf::server::sha256(f.buffer.data(), f.buffer.size())[0];
    append_durably(f.fd, f.buffer.data(), f.buffer.size());
  }
  return thread_cpu_s() - start;
}

struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return {};
  const std::size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {median, v.front(), v.back()};
}
json to_json(const Spread& s) { return {{"median", s.median}, {"min", s.min}, {"max", s.max}}; }

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--port")
      o.port = static_cast<unsigned short>(std::stoi(v));
    else if (k == "--server-pid")
      o.server_pid = std::stoi(v);
    else if (k == "--ingest-token")
      o.ingest_token = v;
    else if (k == "--publish-token")
      o.publish_token = v;
    else if (k == "--version")
      o.version = v;
    else if (k == "--work-dir")
      o.work_dir = v;
    else if (k == "--out")
      o.out = v;
    else if (k == "--rows")
      o.rows = std::stoi(v);
    else if (k == "--leaves")
      o.leaves = std::stoi(v);
    else if (k == "--clients-per-round")
      o.clients_per_round = std::stoi(v);
    else if (k == "--uploads")
      o.uploads = std::stoi(v);
    else if (k == "--rounds")
      o.rounds = std::stoi(v);
    else if (k == "--pairs")
      o.pairs = std::stoi(v);
    else {
      std::cerr << "ingest_bench: unknown option " << k << "\n";
      return 2;
    }
  }
  if (o.port == 0 || o.server_pid == 0 || o.ingest_token.empty() || o.publish_token.empty()) {
    std::cerr << "ingest_bench: --port, --server-pid, --ingest-token, --publish-token needed\n";
    return 2;
  }
  std::mt19937 rng(7);
  std::vector<std::string> bodies;
  std::vector<core::SafetensorsFile> decoded;
  for (int i = 0; i < o.leaves; ++i) {
    const auto bytes = make_upload(o, rng);
    bodies.emplace_back(bytes.begin(), bytes.end());
    decoded.push_back(core::read_safetensors(bytes));
  }
  // The published model's bytes: the demo model's tensors, F32.
  core::NamedTensors model_tensors;
  const auto dim = static_cast<std::size_t>(o.dim), units = static_cast<std::size_t>(o.units);
  model_tensors.emplace(
      "emb/weight",
      core::DenseTensor::zeros(core::DType::F32, {static_cast<std::size_t>(o.vocab), dim}));
  model_tensors.emplace("out/weight", core::DenseTensor::zeros(core::DType::F32, {dim, units}));
  model_tensors.emplace("out/bias", core::DenseTensor::zeros(core::DType::F32, {units}));
  const std::vector<std::uint8_t> model = core::write_safetensors(model_tensors);

  Floor floor;
  const std::string floor_path = o.work_dir + "/floor.bin";
  floor.fd = open(floor_path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (floor.fd < 0) throw std::runtime_error("cannot open " + floor_path);

  net::io_context ioc;
  Client client(ioc, o);
  const Population ingest{"ingest", o.ingest_token}, publish{"publish", o.publish_token};
  double body_bytes = 0;
  for (const auto& b : bodies) body_bytes += static_cast<double>(b.size());
  const double mean_body = body_bytes / o.leaves;
  int upload_index = 0;

  struct Segment {
    double server_cpu_s = 0, wall_s = 0;
  };
  auto server_ingest = [&]() {
    const double cpu = process_cpu_s(o.server_pid);
    const auto t = Clock::now();
    for (int i = 0; i < o.uploads; ++i) {
      claim_and_upload(client, ingest, bodies[static_cast<std::size_t>(upload_index++ % o.leaves)]);
    }
    return Segment{process_cpu_s(o.server_pid) - cpu, seconds_since(t)};
  };
  auto server_publish = [&]() {
    const double cpu = process_cpu_s(o.server_pid);
    const auto t = Clock::now();
    int round = population_round(client, publish);
    for (int r = 0; r < o.rounds; ++r) {
      for (int i = 0; i < o.clients_per_round; ++i) {
        claim_and_upload(client, publish,
                         bodies[static_cast<std::size_t>(upload_index++ % o.leaves)]);
      }
      // The close runs off the request path: wait until it has published.
      ++round;
      while (population_round(client, publish) < round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    return Segment{process_cpu_s(o.server_pid) - cpu, seconds_since(t)};
  };

  // Warm-up: the allocator, the page cache, the store's first rounds.
  server_ingest();
  floor_ingest_s(o, floor, bodies, decoded, o.uploads);
  server_publish();
  floor_publish_s(floor, model, o.rounds);

  const auto phases_before = phases(client);
  std::vector<double> ingest_ratio, publish_ratio, server_ms_per_mb, floor_ms_per_mb,
      server_ms_per_model, floor_ms_per_model, uploads_per_core_s, uploads_per_wall_s;
  double total_uploads = 0, total_models = 0;
  for (int p = 0; p < o.pairs; ++p) {
    const Segment a = server_ingest();
    const double b = floor_ingest_s(o, floor, bodies, decoded, o.uploads);
    const Segment a2 = server_publish();
    const double b2 = floor_publish_s(floor, model, o.rounds);
    const double mb = o.uploads * mean_body / 1e6;
    server_ms_per_mb.push_back(1e3 * a.server_cpu_s / mb);
    floor_ms_per_mb.push_back(1e3 * b / mb);
    ingest_ratio.push_back(b / a.server_cpu_s);
    uploads_per_core_s.push_back(o.uploads / a.server_cpu_s);
    uploads_per_wall_s.push_back(o.uploads / a.wall_s);
    const double per_upload = a.server_cpu_s / o.uploads;
    const double publish_s =
        (a2.server_cpu_s - per_upload * o.rounds * o.clients_per_round) / o.rounds;
    server_ms_per_model.push_back(1e3 * publish_s);
    floor_ms_per_model.push_back(1e3 * b2 / o.rounds);
    publish_ratio.push_back((b2 / o.rounds) / publish_s);
    total_uploads += o.uploads + o.rounds * o.clients_per_round;
    total_models += o.rounds;
  }
  const auto phases_after = phases(client);
  close(floor.fd);
  unlink(floor_path.c_str());

  // Breakdown: each server step's wall time, ms per occurrence and per upload or model.
  json breakdown = json::array();
  for (const auto& [phase, after] : phases_after) {
    const auto before =
        phases_before.count(phase) ? phases_before.at(phase) : std::make_pair(0.0, 0.0);
    const double sum = after.first - before.first, count = after.second - before.second;
    if (count <= 0) continue;
    const bool publish_step = phase.rfind("close_", 0) == 0 || phase == "drop_results";
    breakdown.push_back({{"phase", phase},
                         {"count", count},
                         {"ms_each", 1e3 * sum / count},
                         {"per", publish_step ? "model" : "upload"},
                         {"ms_per", 1e3 * sum / (publish_step ? total_models : total_uploads)}});
  }
  const Spread ing = spread(ingest_ratio), pub = spread(publish_ratio);
  const Spread smb = spread(server_ms_per_mb), fmb = spread(floor_ms_per_mb);
  const Spread smod = spread(server_ms_per_model), fmod = spread(floor_ms_per_model);
  const Spread upc = spread(uploads_per_core_s), upw = spread(uploads_per_wall_s);
  json results = json::array();
  results.push_back({{"name", "server_ingest_cpu_ms_per_mb"}, {"value", to_json(smb)}});
  results.push_back({{"name", "floor_ingest_cpu_ms_per_mb"}, {"value", to_json(fmb)}});
  results.push_back({{"name", "server_publish_cpu_ms_per_model"}, {"value", to_json(smod)}});
  results.push_back({{"name", "floor_publish_cpu_ms_per_model"}, {"value", to_json(fmod)}});
  results.push_back({{"name", "accepted_uploads_per_s_per_core"}, {"value", to_json(upc)}});
  results.push_back({{"name", "accepted_uploads_per_s_wall"}, {"value", to_json(upw)}});
  json out = {{"config",
               {{"upload_bytes", mean_body},
                {"model_bytes", model.size()},
                {"rows", o.rows},
                {"uploads_per_segment", o.uploads},
                {"rounds_per_segment", o.rounds},
                {"clients_per_round", o.clients_per_round},
                {"pairs", o.pairs}}},
              {"results", results},
              {"breakdown", breakdown},
              {"ratios",
               {{"ingest_floor_over_server", ing.median},
                {"ingest_floor_over_server_spread", to_json(ing)},
                {"publish_floor_over_server", pub.median},
                {"publish_floor_over_server_spread", to_json(pub)},
                {"accepted_uploads_per_s_per_core", upc.median}}}};
  if (!o.out.empty()) std::ofstream(o.out) << out.dump(2) << "\n";

  std::printf(
      "ingest: %.0f-byte uploads (%d rows, int8 + delta_varint), %zu-byte models, "
      "%d pairs (A B A' B')\n",
      mean_body, o.rows, model.size(), o.pairs);
  std::printf("%-34s %10s %10s %10s\n", "", "median", "min", "max");
  auto row = [](const char* name, const Spread& s) {
    std::printf("%-34s %10.3f %10.3f %10.3f\n", name, s.median, s.min, s.max);
  };
  row("server CPU ms / accepted MB", smb);
  row("floor CPU ms / MB", fmb);
  row("ingest_floor_over_server", ing);
  row("server CPU ms / published model", smod);
  row("floor CPU ms / model", fmod);
  row("publish_floor_over_server", pub);
  row("accepted uploads / s / core", upc);
  row("accepted uploads / s (wall)", upw);
  std::printf("\nserver steps (wall ms, fedleaf_phase_seconds):\n%-26s %8s %10s %12s\n", "step",
              "count", "ms each", "ms per");
  for (const auto& b : breakdown) {
    std::printf("%-26s %8.0f %10.3f %9.3f /%s\n", b["phase"].get<std::string>().c_str(),
                b["count"].get<double>(), b["ms_each"].get<double>(), b["ms_per"].get<double>(),
                b["per"].get<std::string>().c_str());
  }
  return 0;
}
