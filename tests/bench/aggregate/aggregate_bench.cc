// Benchmark of the sparse-sum accumulator against three plain baselines measured in the same
// run: (i) a dense f64 accumulator of size d, compacted afterwards; (ii) LSD radix sort of all
// (key, value) tuples, then coalescing; (iii) an open-addressing hash map. Every method folds
// the same N client updates and produces the same canonical result (sorted keys, values),
// which the benchmark cross-checks.
//
//   fedleaf_aggregate_bench [--clients N] [--pairs K] [--rounds R] [--warmup W] [--json PATH]
//                           [--point NAME] [--min-sample-s S]
//
// Points: weighted_mean of COO updates into d = 2^20 and d = 10^7, and mean_over_contributors
// of row-sparse updates into an embedding of 2^25 rows × 32 (K values = K/32 rows per client).
// fedleaf runs with the expected_entries hint N·k (the headline ratio), with the
// expected_updates hint N (what RoundAggregator's expected_reports passes), and with no hint.
// The radix-sort baseline is not streaming: it keeps every update resident until it sorts,
// which a server taking uploads one at a time cannot do; its row says so.
//
// Method (ratios you can trust on a shared machine): methods are interleaved, never timed one
// after another. A sample of a method is the method run `reps` times back to back, its time per
// run; in the first warm-up round a method runs until its sample has lasted S seconds of CPU
// (default 0.5: one run at d=2^20 is ~0.04 s, too short to be stable on its own), which fixes
// its reps. Per point, W
// warm-up rounds, then R rounds; a round takes one sample of every method, one at a time,
// starting with a different method each round (round r starts with method r mod M). A method's
// time is the median of its rounds. Then each speed ratio (fedleaf / fastest
// baseline, the fastest by those medians) is measured in R back-to-back pairs, alternating which
// runs first (F B, B F, ...); each pair of samples gives one ratio, reported as the median over
// pairs with its min–max. Pairs seconds apart see the same load from other processes. Times are
// this thread's CPU time (cpu_seconds), so time the core spent on other processes is not counted;
// the load average at the start and the end is printed and stored beside the ratios.
// Every method starts from fresh memory: glibc's mmap threshold is fixed at its initial 128 KiB,
// so every large array is a new mapping whose pages are faulted in by the method that writes
// them. Left dynamic, glibc raises the threshold after the first large free and then serves
// arrays up to 32 MiB from heap pages an earlier method already faulted in, so a method's time
// would depend on which method ran before it.
#include <sys/resource.h>
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/aggregation/accumulator/sparse_sum_accumulator.h"

namespace fedleaf::core {
namespace {

struct Point {
  std::string name;
  UpdateEncoding encoding;
  std::uint64_t keys;  // d (coo) or rows (row_sparse)
  std::size_t width;   // values per key
  SparseSumOperator op;
};

// The canonical result every method produces: sorted keys and their values (f32).
struct Output {
  std::vector<std::uint64_t> keys;
  std::vector<float> values;  // keys.size() × width
};

struct Inputs {
  std::vector<Tensor> updates;
  std::vector<double> weights;
  std::size_t entries_per_client = 0;  // keys (coo) or rows (row_sparse)
  // Raw views of the updates for the baselines.
  std::vector<const std::int64_t*> keys;
  std::vector<const float*> values;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// This thread's CPU time (user + system), in seconds: what every method is timed with. Every
// method is single-threaded, so on a quiet machine it equals wall time; on a shared one it
// leaves out the time other processes held the core (they still share caches and memory).
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The 1-minute load average (/proc/loadavg), -1 where unavailable.
double load_average() {
  std::ifstream in("/proc/loadavg");
  double load = -1.0;
  in >> load;
  return in ? load : -1.0;
}

// Process peak RSS since the last reset (Linux: VmHWM, reset through clear_refs).
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// STREAM "add" (a = b + c) over arrays far larger than the caches: the machine's memory
// bandwidth, for context.
double stream_add_gbps() {
  const std::size_t n = std::size_t{1} << 24;
  std::vector<double> a(n, 0.0), b(n, 1.0), c(n, 2.0);
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + c[i];
    best = std::min(best, seconds_since(start));
    b[rep] = a[n - 1 - static_cast<std::size_t>(rep)];
  }
  return 3.0 * 8.0 * static_cast<double>(n) / best / 1e9;
}

Inputs make_inputs(const Point& p, std::size_t clients, std::size_t pairs, std::uint64_t seed) {
  Inputs in;
  std::mt19937_64 rng(seed);
  in.entries_per_client =
      p.encoding == UpdateEncoding::kCoo ? pairs : std::max<std::size_t>(1, pairs / p.width);
  std::uniform_int_distribution<std::uint64_t> key(0, p.keys - 1);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  for (std::size_t c = 0; c < clients; ++c) {
    std::vector<std::int64_t> k;
    while (k.size() < in.entries_per_client) {
      while (k.size() < in.entries_per_client) k.push_back(static_cast<std::int64_t>(key(rng)));
      std::sort(k.begin(), k.end());
      k.erase(std::unique(k.begin(), k.end()), k.end());
    }
    const std::size_t n = k.size();
    in.weights.push_back(static_cast<double>(1 + (c * 37) % 100));
    if (p.encoding == UpdateEncoding::kCoo) {
      CooIndices idx = CooIndices::from_shape({n, 1});
      std::copy(k.begin(), k.end(), idx.begin());
      xt::xarray<float> v = xt::xarray<float>::from_shape({n});
      for (float& x : v) x = value(rng);
      in.updates.emplace_back(SparseTensor(std::move(idx), DenseTensor(std::move(v)),
                                           {static_cast<std::int64_t>(p.keys)}));
    } else {
      RowIndices rows = RowIndices::from_shape({n});
      std::copy(k.begin(), k.end(), rows.begin());
      xt::xarray<float> v = xt::xarray<float>::from_shape({n, p.width});
      for (float& x : v) x = value(rng);
      in.updates.emplace_back(
          RowSparseTensor(std::move(rows), DenseTensor(std::move(v)),
                          {static_cast<std::int64_t>(p.keys), static_cast<std::int64_t>(p.width)}));
    }
  }
  for (const Tensor& t : in.updates) {
    if (const auto* s = std::get_if<SparseTensor>(&t)) {
      in.keys.push_back(s->indices().data());
      in.values.push_back(s->values().data<float>());
    } else {
      const auto& r = std::get<RowSparseTensor>(t);
      in.keys.push_back(r.indices().data());
      in.values.push_back(r.values().data<float>());
    }
  }
  return in;
}

double total_weight(const Inputs& in) {
  double w = 0.0;
  for (double x : in.weights) w += x;
  return w;
}

// ---- fedleaf --------------------------------------------------------------------------------

struct FedleafRun {
  Output out;
  std::size_t peak_bytes = 0;
  Representation representation = Representation::kSparse;
};

FedleafRun run_fedleaf(const Point& p, const Inputs& in, AccumulatorOptions options,
                       double& seconds) {
  const double start = cpu_seconds();
  fedleaf::core::DenseShape shape{static_cast<std::int64_t>(p.keys)};
  if (p.encoding == UpdateEncoding::kRowSparse) shape.push_back(static_cast<std::int64_t>(p.width));
  SparseSumAccumulator acc("bench", {p.op, 0.0}, p.encoding, DType::F32, shape, options);
  for (std::size_t c = 0; c < in.updates.size(); ++c) acc.add(in.updates[c], in.weights[c]);
  const Tensor result = acc.finalize();
  seconds = cpu_seconds() - start;
  FedleafRun run;
  run.peak_bytes = acc.peak_state_bytes();
  run.representation = acc.representation();
  const DenseTensor* values = nullptr;
  if (const auto* s = std::get_if<SparseTensor>(&result)) {
    run.out.keys.assign(s->indices().begin(), s->indices().end());
    values = &s->values();
  } else {
    const auto& r = std::get<RowSparseTensor>(result);
    run.out.keys.assign(r.indices().begin(), r.indices().end());
    values = &r.values();
  }
  run.out.values.assign(values->data<float>(), values->data<float>() + values->size());
  return run;
}

// ---- baseline (i): dense array of size d, then compacted ------------------------------------

Output dense_baseline(const Point& p, const Inputs& in, std::size_t& bytes) {
  const std::size_t d = p.keys;
  std::vector<double> sums(d, 0.0);
  std::vector<std::uint64_t> touched((d + 63) / 64, 0);
  bytes = sums.size() * 8 + touched.size() * 8;
  for (std::size_t c = 0; c < in.updates.size(); ++c) {
    const std::int64_t* k = in.keys[c];
    const float* v = in.values[c];
    const double w = in.weights[c];
    for (std::size_t i = 0; i < in.entries_per_client; ++i) {
      const auto key = static_cast<std::uint64_t>(k[i]);
      sums[key] += w * static_cast<double>(v[i]);
      touched[key >> 6] |= std::uint64_t{1} << (key & 63);
    }
  }
  const double total = total_weight(in);
  Output out;
  std::size_t n = 0;
  for (std::uint64_t word : touched) n += static_cast<std::size_t>(__builtin_popcountll(word));
  out.keys.reserve(n);
  out.values.reserve(n);
  for (std::size_t word = 0; word < touched.size(); ++word) {
    for (std::uint64_t bits = touched[word]; bits; bits &= bits - 1) {
      const std::size_t key = word * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
      out.keys.push_back(key);
      out.values.push_back(static_cast<float>(sums[key] / total));
    }
  }
  return out;
}

// ---- baseline (ii): LSD radix sort of all tuples, then coalescing ---------------------------

struct Tuple {
  std::uint64_t key;
  std::uint64_t payload;  // coo: f64 bits of w·v; row_sparse: entry number c·rows + i
};

void radix_sort(std::vector<Tuple>& tuples, std::vector<Tuple>& scratch, std::uint64_t max_key) {
  unsigned bits = 1;
  while (bits < 64 && (std::uint64_t{1} << bits) <= max_key) ++bits;
  const unsigned passes = (bits + 10) / 11;
  const unsigned digit = (bits + passes - 1) / passes;
  const std::size_t buckets = std::size_t{1} << digit;
  std::vector<std::size_t> count(buckets);
  scratch.resize(tuples.size());
  for (unsigned pass = 0; pass < passes; ++pass) {
    const unsigned shift = pass * digit;
    std::fill(count.begin(), count.end(), 0);
    for (const Tuple& t : tuples) ++count[(t.key >> shift) & (buckets - 1)];
    std::size_t sum = 0;
    for (std::size_t& c : count) {
      const std::size_t n = c;
      c = sum;
      sum += n;
    }
    for (const Tuple& t : tuples) scratch[count[(t.key >> shift) & (buckets - 1)]++] = t;
    tuples.swap(scratch);
  }
}

Output sort_baseline(const Point& p, const Inputs& in, std::size_t& bytes) {
  const std::size_t per = in.entries_per_client;
  std::vector<Tuple> tuples(in.updates.size() * per), scratch;
  for (std::size_t c = 0; c < in.updates.size(); ++c) {
    for (std::size_t i = 0; i < per; ++i) {
      Tuple& t = tuples[c * per + i];
      t.key = static_cast<std::uint64_t>(in.keys[c][i]);
      if (p.width == 1) {
        const double wv = in.weights[c] * static_cast<double>(in.values[c][i]);
        std::memcpy(&t.payload, &wv, 8);
      } else {
        t.payload = c * per + i;
      }
    }
  }
  radix_sort(tuples, scratch, p.keys - 1);
  bytes = (tuples.capacity() + scratch.capacity()) * sizeof(Tuple);
  const double total = total_weight(in);
  Output out;
  std::vector<double> row(p.width);
  for (std::size_t b = 0; b < tuples.size();) {
    std::size_t e = b;
    std::fill(row.begin(), row.end(), 0.0);
    double contributors = 0.0;
    for (; e < tuples.size() && tuples[e].key == tuples[b].key; ++e) {
      if (p.width == 1) {
        double wv;
        std::memcpy(&wv, &tuples[e].payload, 8);
        row[0] += wv;
      } else {
        const std::size_t c = tuples[e].payload / per, i = tuples[e].payload % per;
        const float* v = in.values[c] + i * p.width;
        const double w = in.weights[c];
        for (std::size_t j = 0; j < p.width; ++j) row[j] += w * static_cast<double>(v[j]);
        contributors += w;
      }
    }
    out.keys.push_back(tuples[b].key);
    const double divisor = p.op == SparseSumOperator::kMeanOverContributors ? contributors : total;
    for (double x : row) out.values.push_back(static_cast<float>(x / divisor));
    b = e;
  }
  return out;
}

// ---- baseline (iii): open-addressing hash map -----------------------------------------------

Output hash_baseline(const Point& p, const Inputs& in, std::size_t& bytes) {
  const std::size_t expected = in.updates.size() * in.entries_per_client;
  std::size_t capacity = 16;
  while (capacity < 2 * expected) capacity *= 2;
  unsigned shift = 64;
  for (std::size_t c = capacity; c > 1; c >>= 1) --shift;
  constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  struct Entry {
    std::uint64_t key;
    std::uint64_t slot;
  };
  std::vector<Entry> table(capacity, Entry{kEmpty, 0});
  std::vector<std::uint64_t> slot_keys;
  std::vector<double> sums, contributors;
  slot_keys.reserve(expected);
  sums.reserve(expected * p.width);
  if (p.width > 1) contributors.reserve(expected);
  const std::size_t w = p.width;
  for (std::size_t c = 0; c < in.updates.size(); ++c) {
    const double weight = in.weights[c];
    for (std::size_t i = 0; i < in.entries_per_client; ++i) {
      const auto key = static_cast<std::uint64_t>(in.keys[c][i]);
      std::size_t pos = static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift);
      while (table[pos].key != key && table[pos].key != kEmpty) pos = (pos + 1) & (capacity - 1);
      if (table[pos].key == kEmpty) {
        table[pos] = Entry{key, slot_keys.size()};
        slot_keys.push_back(key);
        sums.resize(sums.size() + w, 0.0);
        if (w > 1) contributors.push_back(0.0);
      }
      const std::size_t slot = table[pos].slot;
      const float* v = in.values[c] + i * w;
      for (std::size_t j = 0; j < w; ++j) sums[slot * w + j] += weight * static_cast<double>(v[j]);
      if (w > 1) contributors[slot] += weight;
    }
  }
  bytes = table.capacity() * sizeof(Entry) +
          (slot_keys.capacity() + sums.capacity() + contributors.capacity()) * 8;
  std::vector<std::pair<std::uint64_t, std::size_t>> order(slot_keys.size());
  for (std::size_t s = 0; s < slot_keys.size(); ++s) order[s] = {slot_keys[s], s};
  std::sort(order.begin(), order.end());
  const double total = total_weight(in);
  Output out;
  out.keys.reserve(order.size());
  out.values.reserve(order.size() * w);
  for (const auto& [key, slot] : order) {
    out.keys.push_back(key);
    const double divisor =
        p.op == SparseSumOperator::kMeanOverContributors ? contributors[slot] : total;
    for (std::size_t j = 0; j < w; ++j)
      out.values.push_back(static_cast<float>(sums[slot * w + j] / divisor));
  }
  return out;
}

// Largest relative difference between two outputs; infinity when the key sets differ.
double difference(const Output& a, const Output& b) {
  if (a.keys != b.keys || a.values.size() != b.values.size()) return INFINITY;
  double worst = 0.0;
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    worst = std::max(worst, std::abs(double(a.values[i]) - b.values[i]) /
                                (1e-6 + std::abs(double(b.values[i]))));
  }
  return worst;
}

struct Measured {
  std::string method;
  double seconds = 0.0;
  double pairs_per_s = 0.0;
  std::size_t state_bytes = 0;
  double peak_rss_mib = 0.0;
  std::string note;
  int reps = 1;
};

// The bench, in fedleaf::core beside the code it measures; main() calls it.
int run(int argc, char** argv) {
  std::size_t clients = 1000, pairs = 5000;
  int rounds = 7;
  int warmup = 1;
  double min_sample_s = 0.5;
  std::string json_path = "build/bench/aggregate.json";
  std::string only_point;  // empty: every point
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--clients")
      clients = std::stoul(argv[i + 1]);
    else if (flag == "--pairs")
      pairs = std::stoul(argv[i + 1]);
    else if (flag == "--rounds")
      rounds = std::stoi(argv[i + 1]);
    else if (flag == "--warmup")
      warmup = std::stoi(argv[i + 1]);
    else if (flag == "--json")
      json_path = argv[i + 1];
    else if (flag == "--point")
      only_point = argv[i + 1];
    else if (flag == "--min-sample-s")
      min_sample_s = std::stod(argv[i + 1]);
    else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }
  if (rounds < 1 || warmup < 1 || !(min_sample_s >= 0.0)) {
    std::cerr << "--rounds and --warmup must be >= 1, --min-sample-s >= 0\n";
    return 2;
  }
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
  const double load_start = load_average();
  const double bandwidth = stream_add_gbps();
  std::printf(
      "fedleaf aggregate bench: N = %zu clients, k = %zu pairs each, %d interleaved rounds after "
      "%d warm-up, samples of >= %.2f s CPU\n",
      clients, pairs, rounds, warmup, min_sample_s);
  std::printf("machine: stream-add memory bandwidth %.1f GB/s, load average %.2f\n\n", bandwidth,
              load_start);

  const std::vector<Point> points{
      {"d=2^20", UpdateEncoding::kCoo, std::uint64_t{1} << 20, 1, SparseSumOperator::kWeightedMean},
      {"d=10^7", UpdateEncoding::kCoo, 10'000'000, 1, SparseSumOperator::kWeightedMean},
      {"d=2^25x32", UpdateEncoding::kRowSparse, std::uint64_t{1} << 25, 32,
       SparseSumOperator::kMeanOverContributors}};

  nlohmann::json results = nlohmann::json::array();
  nlohmann::json speed = nlohmann::json::object();
  nlohmann::json speed_no_hint = nlohmann::json::object();
  nlohmann::json speed_updates_hint = nlohmann::json::object();
  nlohmann::json spreads = nlohmann::json::object();
  double memory_vs_dense = 0.0;
  std::printf("%-10s %-26s %12s %5s %12s %14s %12s  %s\n", "point", "method", "median cpu s",
              "reps", "Mpairs/s", "state MiB", "peak RSS MiB", "note");
  for (const Point& p : points) {
    if (!only_point.empty() && p.name != only_point) continue;
    const Inputs in = make_inputs(p, clients, pairs, 42);
    const double total_pairs =
        static_cast<double>(clients) * static_cast<double>(in.entries_per_client * p.width);
    const double input_mib = total_pairs * (4.0 + 8.0 / static_cast<double>(p.width)) / 1048576.0;
    const std::uint64_t expected = clients * in.entries_per_client;
    const double dense_f32_bytes = static_cast<double>(p.keys) * static_cast<double>(p.width) * 4.0;
    const bool dense_runs = dense_f32_bytes <= 1e9;

    struct Method {
      std::string name;
      std::function<Output(std::size_t&, double&)> run;
      const std::string* note;  // filled by the run
    };
    const auto fedleaf_method = [&](AccumulatorOptions options, std::string& note) {
      // Timed up to finalize(); copying its tensor into an Output is not counted.
      return [&, options](std::size_t& bytes, double& seconds) {
        FedleafRun run = run_fedleaf(p, in, options, seconds);
        bytes = run.peak_bytes;
        note = run.representation == Representation::kDense ? "ended dense" : "ended sparse";
        return std::move(run.out);
      };
    };
    const std::string no_note;
    std::string note_hint, note_auto, note_updates, note_sparse, note_dense;
    // Radix sort is not a streaming method: it needs every update resident until the end (its
    // state column counts only the tuples). A streaming server holds one update at a time.
    const std::string note_radix =
        "not streaming: keeps all " + std::to_string(clients) + " updates resident";
    std::vector<Method> methods{
        {"fedleaf (hint N*k)", fedleaf_method({RepresentationPolicy::kAuto, expected}, note_hint),
         &note_hint},
        {"fedleaf (no hint)", fedleaf_method({RepresentationPolicy::kAuto, 0}, note_auto),
         &note_auto},
        {"fedleaf (hint N updates)",
         fedleaf_method({RepresentationPolicy::kAuto, 0, clients}, note_updates), &note_updates},
        {"fedleaf forced sparse",
         fedleaf_method({RepresentationPolicy::kSparse, expected}, note_sparse), &note_sparse}};
    if (dense_runs) {
      methods.push_back({"fedleaf forced dense",
                         fedleaf_method({RepresentationPolicy::kDense, 0}, note_dense),
                         &note_dense});
      methods.push_back({"baseline dense+compact",
                         [&](std::size_t& b, double&) { return dense_baseline(p, in, b); },
                         &no_note});
    }
    methods.push_back({"baseline radix sort",
                       [&](std::size_t& b, double&) { return sort_baseline(p, in, b); },
                       &note_radix});
    methods.push_back({"baseline hash map",
                       [&](std::size_t& b, double&) { return hash_baseline(p, in, b); }, &no_note});

    std::vector<std::vector<double>> times(methods.size());
    std::vector<std::size_t> bytes(methods.size());
    std::vector<double> rss(methods.size());
    std::vector<int> reps(methods.size(), 0);  // 0 until the first warm-up round sets it
    // One sample: `reps` runs back to back; the CPU seconds per run, the last run's output. The
    // first sample of a method runs until it has lasted min_sample_s and fixes reps to its count.
    const auto sample = [&](std::size_t m, Output& out) {
      double total = 0.0;
      int count = 0;
      while (reps[m] > 0 ? count < reps[m] : count == 0 || total < min_sample_s) {
        double seconds = 0.0;
        const double start = cpu_seconds();
        out = methods[m].run(bytes[m], seconds);
        total += seconds > 0.0 ? seconds : cpu_seconds() - start;
        ++count;
      }
      reps[m] = count;
      return total / count;
    };
    Output reference;
    // Round r starts with method r (mod the count), so no method always runs first, right after
    // the previous point or method freed its memory. Warm-up rounds are checked, not timed.
    for (int r = -warmup; r < rounds; ++r) {
      for (std::size_t turn = 0; turn < methods.size(); ++turn) {
        const std::size_t m = (turn + static_cast<std::size_t>(r + warmup)) % methods.size();
        reset_peak_rss();
        Output out;
        const double seconds = sample(m, out);
        if (r >= 0) times[m].push_back(seconds);
        rss[m] = std::max(rss[m], peak_rss_mib());
        if (r == -warmup && turn == 0) {  // method 0: fedleaf
          reference = std::move(out);
        } else {
          const double diff = difference(out, reference);
          if (!(diff <= 1e-4)) {
            std::fprintf(stderr, "%s: %s disagrees with fedleaf (relative difference %g)\n",
                         p.name.c_str(), methods[m].name.c_str(), diff);
            return 1;
          }
        }
      }
    }
    std::vector<Measured> rows;
    for (std::size_t m = 0; m < methods.size(); ++m) {
      Measured row{methods[m].name, median(times[m]), 0.0,    bytes[m],
                   rss[m],          *methods[m].note, reps[m]};
      row.pairs_per_s = total_pairs / row.seconds;
      std::printf("%-10s %-26s %12.4f %5d %12.1f %14.1f %12.0f  %s\n", p.name.c_str(),
                  row.method.c_str(), row.seconds, reps[m], row.pairs_per_s / 1e6,
                  static_cast<double>(row.state_bytes) / 1048576.0, row.peak_rss_mib,
                  row.note.c_str());
      rows.push_back(row);
    }
    if (!dense_runs) {
      std::printf(
          "%-10s %-26s   not run: a dense accumulator needs %.1f GiB as f32 (%.1f GiB as "
          "f64)\n",
          p.name.c_str(), "baseline dense+compact", dense_f32_bytes / 1073741824.0,
          2 * dense_f32_bytes / 1073741824.0);
    }

    // The speed ratios, pair by pair: a fedleaf method alternates with the fastest baseline of
    // the rounds above (F B, B F, F B, ...), back to back, and each pair gives one ratio.
    std::size_t fastest = 0;
    for (std::size_t m = 0; m < methods.size(); ++m) {
      if (methods[m].name.rfind("baseline", 0) == 0 &&
          (methods[fastest].name.rfind("baseline", 0) != 0 ||
           rows[m].seconds < rows[fastest].seconds)) {
        fastest = m;
      }
    }
    const auto timed = [&](std::size_t m) {
      Output unused;
      return sample(m, unused);
    };
    const auto speed_ratio = [&](std::size_t fedleaf_row) {
      std::vector<double> ratios;
      for (int k = 0; k < rounds; ++k) {
        const bool fedleaf_first = k % 2 == 0;
        const double first = timed(fedleaf_first ? fedleaf_row : fastest);
        const double second = timed(fedleaf_first ? fastest : fedleaf_row);
        ratios.push_back(fedleaf_first ? second / first : first / second);
      }
      return ratios;
    };
    const std::vector<double> hint = speed_ratio(0), no_hint = speed_ratio(1),
                              updates_hint = speed_ratio(2);
    speed[p.name] = median(hint);
    speed_no_hint[p.name] = median(no_hint);
    speed_updates_hint[p.name] = median(updates_hint);
    const auto spread = [](const std::vector<double>& v) {
      return nlohmann::json{{"median", median(v)},
                            {"min", *std::min_element(v.begin(), v.end())},
                            {"max", *std::max_element(v.begin(), v.end())},
                            {"rounds", v}};
    };
    spreads[p.name] = {{"baseline", methods[fastest].name},
                       {"hint_entries", spread(hint)},
                       {"no_hint", spread(no_hint)},
                       {"updates_hint", spread(updates_hint)}};
    if (!dense_runs) memory_vs_dense = dense_f32_bytes / static_cast<double>(rows[0].state_bytes);
    const auto range = [](const std::vector<double>& v) {
      char text[32];
      std::snprintf(text, sizeof text, "%.2f-%.2f", *std::min_element(v.begin(), v.end()),
                    *std::max_element(v.begin(), v.end()));
      return std::string(text);
    };
    std::printf(
        "%-10s fedleaf / %s, median of %d pairs (min-max): hint N*k %.2f (%s), hint N "
        "updates %.2f (%s), no hint %.2f (%s); inputs %.0f MiB resident\n\n",
        p.name.c_str(), methods[fastest].name.c_str(), rounds, median(hint), range(hint).c_str(),
        median(updates_hint), range(updates_hint).c_str(), median(no_hint), range(no_hint).c_str(),
        input_mib);
    for (const Measured& m : rows) {
      results.push_back({{"point", p.name},
                         {"method", m.method},
                         {"median_cpu_seconds", m.seconds},
                         {"repetitions_per_sample", m.reps},
                         {"pairs_per_second", m.pairs_per_s},
                         {"state_bytes", m.state_bytes},
                         {"peak_rss_mib", m.peak_rss_mib},
                         {"note", m.note}});
    }
    if (!dense_runs) {
      results.push_back({{"point", p.name},
                         {"method", "baseline dense+compact"},
                         {"note", "not run: dense f32 accumulator would need " +
                                      std::to_string(dense_f32_bytes / 1073741824.0) + " GiB"}});
    }
  }
  std::printf("memory_vs_dense at d=2^25x32 (dense f32 bytes / fedleaf peak state bytes) = %.1f\n",
              memory_vs_dense);
  const double load_end = load_average();
  std::printf("load average: %.2f at the start, %.2f at the end\n", load_start, load_end);
  const nlohmann::json doc{{"benchmark", "aggregate"},
                           {"clients", clients},
                           {"pairs_per_client", pairs},
                           {"method", "interleaved rounds; ratios: median of back-to-back pairs"},
                           {"rounds", rounds},
                           {"warmup_rounds", warmup},
                           {"min_sample_cpu_seconds", min_sample_s},
                           {"allocation", "glibc mmap threshold fixed at 128 KiB: fresh pages"},
                           {"load_average", {{"start", load_start}, {"end", load_end}}},
                           {"stream_add_gbps", bandwidth},
                           {"results", results},
                           {"ratios",
                            {{"speed_vs_best_baseline", speed},
                             {"speed_vs_best_baseline_no_hint", speed_no_hint},
                             {"speed_vs_best_baseline_updates_hint", speed_updates_hint},
                             {"memory_vs_dense", memory_vs_dense}}},
                           {"ratio_spreads", spreads}};
  std::ofstream(json_path) << doc.dump(2) << "\n";
  std::printf("wrote %s\n", json_path.c_str());
  return 0;
}

}  // namespace
}  // namespace fedleaf::core

int main(int argc, char** argv) { return fedleaf::core::run(argc, argv); }
