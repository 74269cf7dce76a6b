// Benchmark of a private round's release (issue 39): PrivateSum::release puts tree noise on every
// coordinate of every row of every tensor, so its cost is coordinates x nodes x the cost of one
// noise draw. Timed on the demo's models (shapes read from the demo plans, parameter_specs) and
// a small one, at round 1 (one node) and round 2 (two nodes: the node it closes and the one it
// retires; a round releases about two on average), against the implementation before issue 39's
// speed-up (legacy_noise.h: the same mechanism, slower) measured in the same run, and the release
// a server's close makes when the round's noise was drawn ahead (round_noise.h: the draws done
// while the round was open, the close only adding them).
//
//   fedleaf_privacy_release_bench [--json PATH] [--models small,spam,wide_deep] [--rounds R]
//                                 [--draws N]
//
// Method: per model and node count, R rounds; a round times one release of each implementation
// and one with the noise drawn ahead (drawn once before the rounds: the draw is the same work as
// the inline release's), rotating which goes first. Times are this thread's CPU time; a figure is
// the median over rounds, and the speed ratio (legacy / new) the median of per-round ratios, with
// its min-max. "ns per coordinate per node" = release time / (coordinates x nodes). Words per draw:
// 64-bit words of ChaCha20 keystream one discrete Gaussian draw consumes, counted over N draws at
// the grid's scale for noise_multiplier x clip_norm = 1 (scale 4096; the cost barely depends on
// it). The legacy path is checked against the frozen pin of the old derivation before timing.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/model_spec.h"
#include "core/privacy/chacha20.h"
#include "core/privacy/grid_gaussian.h"
#include "core/privacy/private_sum.h"
#include "core/privacy/round_noise.h"
#include "core/privacy/tree_forest.h"
#include "core/train/plan.h"
#include "tests/bench/privacy_release/legacy_noise.h"

namespace fedleaf::bench {
namespace {

using core::TensorLayouts;

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double load_average() {
  double load = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  return load;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

TensorLayouts layouts_of_plan(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path + " (run from the repository root)");
  std::stringstream text;
  text << in.rdbuf();
  const core::Plan plan = core::parse_plan(text.str());
  TensorLayouts layouts;
  for (const core::ParameterSpec& p : core::parameter_specs(plan.model)) {
    layouts[p.name] = {core::DType::F32, p.shape};
  }
  return layouts;
}

TensorLayouts model_layouts(const std::string& name) {
  if (name == "small") {
    return {{"emb/weight", {core::DType::F32, {16384, 16}}},
            {"out/weight", {core::DType::F32, {16, 2}}},
            {"out/bias", {core::DType::F32, {2}}}};
  }
  if (name == "tiny") {  // --smoke
    return {{"emb/weight", {core::DType::F32, {512, 16}}},
            {"wide/weight", {core::DType::F32, {2048, 1}}},
            {"out/bias", {core::DType::F32, {2}}}};
  }
  if (name == "spam") return layouts_of_plan("scripts/demo/spam_plan.json");
  if (name == "wide_deep") return layouts_of_plan("scripts/demo/spam_wide_deep_plan.json");
  throw std::runtime_error("unknown model " + name + " (small, spam, wide_deep, tiny)");
}

std::uint64_t coordinates(const TensorLayouts& layouts) {
  std::uint64_t n = 0;
  for (const auto& [name, layout] : layouts) {
    std::uint64_t size = 1;
    for (std::size_t d : layout.shape) size *= d;
    n += size;
  }
  return n;
}

core::TreeNoiseSecret bench_secret() {
  core::TreeNoiseSecret secret;
  for (std::size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<std::uint8_t>(3 * i + 1);
  return secret;
}

core::ChaCha20Key node_key(const core::TreeNoiseSecret& secret, core::TreeNode node) {
  core::ChaCha20Nonce nonce{'t', 'r', 'e', 'e'};
  const std::uint64_t id = static_cast<std::uint64_t>(node.level) << 56 | node.index;
  for (int b = 0; b < 8; ++b) nonce[4 + b] = static_cast<std::uint8_t>(id >> (8 * b));
  const core::ChaCha20Block block = core::chacha20_block(secret, 0, nonce);
  core::ChaCha20Key key;
  std::copy(block.begin(), block.begin() + key.size(), key.begin());
  return key;
}

std::vector<LegacyNodeKey> legacy_keys(const core::TreeNoiseSecret& secret, std::uint64_t round) {
  const core::RoundNoiseNodes nodes = core::round_noise_nodes(round);
  std::vector<LegacyNodeKey> keys;
  for (const core::TreeNode& node : nodes.added) keys.push_back({node_key(secret, node), 1});
  for (const core::TreeNode& node : nodes.removed) keys.push_back({node_key(secret, node), -1});
  return keys;
}

// The old PrivateSum::release of an empty sum: every row's noise, scaled, written dense.
std::vector<std::vector<float>> legacy_release(const TensorLayouts& layouts,
                                               const core::TreeNoiseSecret& secret,
                                               std::uint64_t round, std::uint64_t scale,
                                               double grid, double denominator) {
  const std::vector<LegacyNodeKey> keys = legacy_keys(secret, round);
  std::vector<std::vector<float>> out;
  std::uint32_t ordinal = 0;
  for (const auto& [name, layout] : layouts) {
    const std::size_t rows = layout.shape.empty() ? 1 : layout.shape[0];
    std::size_t row_size = 1;
    for (std::size_t d = 1; d < layout.shape.size(); ++d) row_size *= layout.shape[d];
    std::vector<float> released(rows * row_size);
    std::vector<std::int64_t> units(row_size);
    for (std::uint64_t row = 0; row < rows; ++row) {
      std::fill(units.begin(), units.end(), 0);
      legacy_add_to_row(keys, scale, ordinal, row, units.data(), units.size());
      for (std::size_t i = 0; i < row_size; ++i) {
        released[row * row_size + i] =
            static_cast<float>(static_cast<double>(units[i]) * grid / denominator);
      }
    }
    out.push_back(std::move(released));
    ++ordinal;
  }
  return out;
}

// Counts the words a sampler takes from the source it wraps.
class CountingBits : public core::RandomBits {
 public:
  explicit CountingBits(core::RandomBits& inner) : inner_(inner) {}
  std::uint64_t next() override {
    ++words;
    return inner_.next();
  }
  std::uint64_t words = 0;

 private:
  core::RandomBits& inner_;
};

// The old derivation's pin (tree_noise_derivation_is_frozen before issue 39's speed-up): the
// baseline must be the code that was replaced, not a slower variant of something else.
void check_legacy_pin() {
  core::TreeNoiseSecret secret;
  for (std::size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<std::uint8_t>(i);
  std::vector<LegacyNodeKey> keys{{node_key(secret, {2, 3}), 1}};
  std::vector<std::int64_t> units(6, 0);
  legacy_add_to_row(keys, 4096, 1, 5, units.data(), units.size());
  if (units != std::vector<std::int64_t>{2766, -5074, -2499, 3859, -1566, -934}) {
    throw std::runtime_error("legacy noise does not reproduce the old frozen pin");
  }
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

}  // namespace
}  // namespace fedleaf::bench

int main(int argc, char** argv) {
  using namespace fedleaf;
  using namespace fedleaf::bench;
  std::string json_path = "build/bench/privacy_release.json";
  std::string models = "small,spam,wide_deep";
  int rounds = 3;
  std::uint64_t draws = 1'000'000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--json")
      json_path = argv[i + 1];
    else if (flag == "--models")
      models = argv[i + 1];
    else if (flag == "--rounds")
      rounds = std::stoi(argv[i + 1]);
    else if (flag == "--draws")
      draws = std::stoull(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const double load_start = load_average();
  check_legacy_pin();
  const core::TreeNoiseSecret secret = bench_secret();
  nlohmann::json results = nlohmann::json::array();
  nlohmann::json ratios = nlohmann::json::object();

  // Words per draw, both implementations, one stream each.
  const core::GridGaussian gaussian(1.0);
  const auto scale = static_cast<std::uint64_t>(gaussian.scale());
  double words_new = 0;
  double words_old = 0;
  {
    core::ChaCha20Bits stream(node_key(secret, {0, 0}), core::ChaCha20Nonce{});
    CountingBits counted(stream);
    core::BitReservoir reservoir(counted);  // as the tree noise draws a row
    for (std::uint64_t i = 0; i < draws; ++i) gaussian.sample_units(reservoir);
    words_new = static_cast<double>(counted.words) / static_cast<double>(draws);
    LegacyChaCha20Bits old_stream(node_key(secret, {0, 0}), core::ChaCha20Nonce{});
    CountingBits old_counted(old_stream);
    for (std::uint64_t i = 0; i < draws; ++i) legacy_sample(old_counted, scale);
    words_old = static_cast<double>(old_counted.words) / static_cast<double>(draws);
  }
  std::printf("load average at start %.2f\n", load_start);
  std::printf("random 64-bit words per draw (scale %llu, %llu draws): legacy %.2f, new %.2f\n\n",
              static_cast<unsigned long long>(scale), static_cast<unsigned long long>(draws),
              words_old, words_new);
  results.push_back({{"name", "words_per_draw"}, {"legacy", words_old}, {"new", words_new}});
  ratios["words_per_draw_legacy_over_new"] = words_old / words_new;

  std::printf("%-10s %10s %5s | %12s %12s | %10s %10s | %8s | %10s %6s\n", "model", "coords",
              "nodes", "legacy s", "new s", "legacy ns", "new ns", "speed-up", "ahead s",
              "inline/ahead");
  std::printf("%-10s %10s %5s | %12s %12s | %10s %10s | %8s | %10s %6s\n", "", "", "", "(release)",
              "(release)", "/coord/node", "/coord/node", "(min-max)", "(release)", "(min-max)");
  for (const std::string& model : split(models)) {
    const TensorLayouts layouts = model_layouts(model);
    const std::uint64_t coords = coordinates(layouts);
    const core::PrivateSumSettings settings{1.0, 1.0, 100, 100};
    const core::PrivateSum sum(layouts, settings);
    for (const std::uint64_t round : {std::uint64_t{1}, std::uint64_t{2}}) {
      const core::RoundNoiseNodes nodes = core::round_noise_nodes(round);
      const double node_count = static_cast<double>(nodes.added.size() + nodes.removed.size());
      const core::RoundNoise drawn = core::RoundNoise::draw(sum.noise_shape(), secret, round);
      std::vector<double> t_new;
      std::vector<double> t_old;
      std::vector<double> t_ahead;
      std::vector<double> speedups;
      std::vector<double> ahead_speedups;
      for (int r = 0; r < rounds; ++r) {
        double a = 0;
        double b = 0;
        double c = 0;
        for (int step = 0; step < 3; ++step) {
          const int which = (step + r) % 3;
          const double start = cpu_seconds();
          if (which == 0) {
            const core::NamedTensors out = sum.release(secret, round);
            a = cpu_seconds() - start;
          } else if (which == 1) {
            const auto out = legacy_release(layouts, secret, round, scale, sum.noise().grid(),
                                            static_cast<double>(settings.denominator));
            b = cpu_seconds() - start;
          } else {
            const core::NamedTensors out = sum.release(drawn);
            c = cpu_seconds() - start;
          }
        }
        t_new.push_back(a);
        t_old.push_back(b);
        t_ahead.push_back(c);
        speedups.push_back(b / a);
        ahead_speedups.push_back(a / c);
      }
      const double m_new = median(t_new);
      const double m_old = median(t_old);
      const double per = static_cast<double>(coords) * node_count;
      const double m_ahead = median(t_ahead);
      const double speedup = median(speedups);
      const double ahead_speedup = median(ahead_speedups);
      std::printf(
          "%-10s %10llu %5.0f | %12.4f %12.4f | %10.1f %10.1f | %5.1fx (%.1f-%.1f) | %10.4f "
          "%6.1fx (%.1f-%.1f)\n",
          model.c_str(), static_cast<unsigned long long>(coords), node_count, m_old, m_new,
          1e9 * m_old / per, 1e9 * m_new / per, speedup,
          *std::min_element(speedups.begin(), speedups.end()),
          *std::max_element(speedups.begin(), speedups.end()), m_ahead, ahead_speedup,
          *std::min_element(ahead_speedups.begin(), ahead_speedups.end()),
          *std::max_element(ahead_speedups.begin(), ahead_speedups.end()));
      results.push_back(
          {{"name", "release_" + model + "_nodes_" + std::to_string(static_cast<int>(node_count))},
           {"model", model},
           {"coordinates", coords},
           {"nodes", node_count},
           {"legacy_release_s", m_old},
           {"new_release_s", m_new},
           {"drawn_ahead_release_s", m_ahead},
           {"legacy_ns_per_coordinate_per_node", 1e9 * m_old / per},
           {"new_ns_per_coordinate_per_node", 1e9 * m_new / per},
           {"rounds", rounds}});
      ratios["release_legacy_over_new_" + model + "_nodes_" +
             std::to_string(static_cast<int>(node_count))] = {
          {"median", speedup},
          {"min", *std::min_element(speedups.begin(), speedups.end())},
          {"max", *std::max_element(speedups.begin(), speedups.end())}};
      ratios["close_inline_over_drawn_ahead_" + model + "_nodes_" +
             std::to_string(static_cast<int>(node_count))] = {
          {"median", ahead_speedup},
          {"min", *std::min_element(ahead_speedups.begin(), ahead_speedups.end())},
          {"max", *std::max_element(ahead_speedups.begin(), ahead_speedups.end())}};
    }
  }
  const double load_end = load_average();
  std::printf("\nload average at end %.2f\n", load_end);
  const nlohmann::json doc{
      {"benchmark", "privacy_release"},
      {"method",
       "per model and node count, releases interleaved round by round (alternating "
       "order); thread CPU time, medians; ratios: median of per-round legacy/new, and of "
       "per-round inline/drawn-ahead release (the noise drawn before the close)"},
      {"load_average", {{"start", load_start}, {"end", load_end}}},
      {"results", results},
      {"ratios", ratios}};
  std::ofstream(json_path) << doc.dump(2) << "\n";
  std::printf("wrote %s\n", json_path.c_str());
  return 0;
}
