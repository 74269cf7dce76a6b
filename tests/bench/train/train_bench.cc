// Native throughput of local training (examples per second through execute()).
//
//   train_bench [spamassassin fixture path]     prints a table, then one JSON object per line
//
// Workloads: (a) sparse logistic regression, 2^20 hashed features, ~40 ids per example, 20k
// examples, batch 32, 3 epochs; (b) embedding_bag 100k x 32 (mean, ~20 ids per example) + dense
// to 10 classes, 10k examples, batch 32, 1 epoch; (c) the SpamAssassin train split with the
// accuracy test's embedding-bag plan (featurization timed separately). Each workload runs once
// to warm up, then 3 times; the median is reported. Timed: the whole execute() call (model
// decode, training, update encode).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/train/executor.h"
#include "core/train/plan.h"
#include "core/train/seeded_random.h"
#include "core/train/text_features.h"

using namespace fedleaf::core;

namespace {

Dataset synthetic(std::uint64_t seed, std::size_t n, std::uint32_t vocab, std::uint32_t mean_ids,
                  std::int32_t classes) {
  SeededRandom rng(seed);
  std::vector<std::uint32_t> offsets{0};
  std::vector<std::uint32_t> ids;
  std::vector<std::int32_t> labels;
  for (std::size_t i = 0; i < n; ++i) {
    const auto count = static_cast<std::uint32_t>(mean_ids / 2 + rng.below(mean_ids + 1));
    std::uint64_t h = 0;
    for (std::uint32_t k = 0; k < count; ++k) {
      const auto id = static_cast<std::uint32_t>(rng.below(vocab));
      ids.push_back(id);
      h += id % 7;
    }
    offsets.push_back(static_cast<std::uint32_t>(ids.size()));
    labels.push_back(static_cast<std::int32_t>(h % static_cast<std::uint64_t>(classes)));
  }
  return Dataset::from_csr(offsets, ids, {}, labels, vocab);
}

struct Result {
  std::string name;
  double seconds;
  double examples_per_second;
};

Result measure(const std::string& name, const std::string& plan, const Dataset& data) {
  const std::vector<std::uint8_t> model = initialize_model(plan, 1);
  const std::size_t epochs = parse_plan(plan).train->epochs;
  std::vector<double> times;
  for (int run = 0; run < 4; ++run) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<std::uint8_t> update = execute(plan, model.data(), model.size(), data);
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    if (update.empty()) std::abort();
    if (run > 0) times.push_back(elapsed.count());
  }
  std::sort(times.begin(), times.end());
  const double seconds = times[times.size() / 2];
  return {name, seconds, static_cast<double>(data.size() * epochs) / seconds};
}

std::string plan_of(const std::string& layers, const std::string& loss, int epochs,
                    const std::string& updates, const std::string& features = "") {
  return R"({"model": {"inputs": {"tokens": "sparse_ids"}, "layers": )" + layers +
         R"(, "loss": ")" + loss +
         R"("}, "train": {"optimizer": {"type": "adam", "learning_rate": 0.01},
         "epochs": )" +
         std::to_string(epochs) + R"(, "batch_size": 32}, "updates": )" + updates + features + "}";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Result> results;
  results.push_back(measure(
      "sparse_logreg_2^20",
      plan_of(
          R"([{"type": "embedding_bag", "name": "lr", "vocab": 1048576, "dim": 1, "combiner": "sum", "initializer": "zeros"}])",
          "sigmoid_cross_entropy", 3,
          R"({"lr/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"}})"),
      synthetic(1, 20000, 1u << 20, 40, 2)));
  results.push_back(measure(
      "embedding_bag_100k_x32_dense10",
      plan_of(
          R"([{"type": "embedding_bag", "name": "emb", "vocab": 100000, "dim": 32, "combiner": "mean"},
                 {"type": "dense", "name": "out", "units": 10}])",
          "softmax_cross_entropy", 1,
          R"({"emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
                  "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
                  "out/bias": {"encoding": "dense", "aggregator": "weighted_mean"}})"),
      synthetic(2, 10000, 100000, 20, 10)));
  if (argc > 1) {
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read the SpamAssassin fixture %s\n", argv[1]);
      return 1;
    }
    std::string header;
    std::getline(in, header);
    std::istringstream hs(header);
    std::string magic;
    int version = 0;
    std::size_t count = 0;
    hs >> magic >> version >> count;
    std::string texts;
    std::vector<std::uint32_t> offsets{0};
    std::vector<std::int32_t> labels;
    for (std::size_t i = 0; i < count; ++i) {
      std::string line, split, group, id;
      int label = 0;
      std::size_t length = 0;
      std::getline(in, line);
      std::istringstream rs(line);
      rs >> label >> split >> group >> id >> length;
      std::string text(length, '\0');
      in.read(&text[0], static_cast<std::streamsize>(length));
      in.get();
      if (split != "train") continue;
      texts += text;
      offsets.push_back(static_cast<std::uint32_t>(texts.size()));
      labels.push_back(label);
    }
    const std::string plan = plan_of(
        R"([{"type": "embedding_bag", "name": "emb", "vocab": 262144, "dim": 16, "combiner": "sqrtn"},
            {"type": "dense", "name": "out", "units": 2}])",
        "softmax_cross_entropy", 5,
        R"({"emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
            "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
            "out/bias": {"encoding": "dense", "aggregator": "weighted_mean"}})",
        R"(, "features": {"hash": "murmur3_32", "num_buckets": 262144, "binary": true})");
    const TextFeatureOptions features = text_features_from_plan(plan);
    const auto start = std::chrono::steady_clock::now();
    const Dataset data = build_hashed_text_dataset(texts.data(), texts.size(), offsets.data(),
                                                   labels.size(), labels.data(), features);
    const std::chrono::duration<double> featurize = std::chrono::steady_clock::now() - start;
    results.push_back({"spamassassin_featurize", featurize.count(),
                       static_cast<double>(labels.size()) / featurize.count()});
    results.push_back(measure("spamassassin_embedding_bag", plan, data));
  }
  std::printf("%-34s %12s %16s\n", "workload", "seconds", "examples/s");
  for (const Result& r : results) {
    std::printf("%-34s %12.4f %16.0f\n", r.name.c_str(), r.seconds, r.examples_per_second);
  }
  for (const Result& r : results) {
    std::printf("{\"name\": \"native/%s\", \"seconds\": %.6f, \"examples_per_second\": %.1f}\n",
                r.name.c_str(), r.seconds, r.examples_per_second);
  }
  return 0;
}
