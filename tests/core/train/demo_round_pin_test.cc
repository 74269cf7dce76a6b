// Pins the bytes of one demo round: a restructuring of the core must leave the initial model,
// every leaf's upload and the published next model bit-identical. The constants were computed
// once, before the core was moved into folders (issue 28); natively and under wasm (the same
// test runs in the wasm core tests) the bytes are the same. If one of them changes, the change
// altered what leaves train or what the server publishes: that needs its own commit and reason.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/aggregation/round/round_aggregator.h"
#include "core/aggregation/updates/update_plan.h"
#include "core/data/dataset.h"
#include "core/data/seeded_random.h"
#include "core/train/executor.h"
#include "core/wire/safetensors.h"

using namespace fedleaf::core;

namespace {

// scripts/demo/spam_plan.json as it was when the constants were computed (copied, so the pin
// does not move when the demo's settings do).
const char* kDemoPlan = R"({
  "model": {
    "inputs": {"tokens": "sparse_ids"},
    "layers": [
      {"type": "embedding_bag", "name": "emb", "input": "tokens", "vocab": 262144, "dim": 16,
       "combiner": "sqrtn"},
      {"type": "dense", "name": "out", "units": 2}
    ],
    "loss": "softmax_cross_entropy"
  },
  "features": {"hash": "murmur3_32", "num_buckets": 262144, "ngrams": 1, "binary": true},
  "train": {"optimizer": {"type": "adam", "learning_rate": 0.03}, "epochs": 1, "batch_size": 32},
  "updates": {
    "emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors",
                   "download": "select"},
    "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
    "out/bias": {"encoding": "dense", "aggregator": "weighted_mean"}
  }
})";

// FNV-1a, 64 bits: enough to tell two byte strings apart here, and the same on every platform.
std::uint64_t fnv1a64(const std::vector<std::uint8_t>& bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (const std::uint8_t b : bytes) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h;
}

// A leaf's data: `n` emails of 1..24 distinct-ish word ids, drawn from the first 600 buckets so
// that the two leaves share rows (mean_over_contributors publishes rows sent by >= 2 reports).
Dataset leaf_data(std::uint64_t seed, std::size_t n) {
  SeededRandom rng(seed);
  std::vector<std::uint32_t> offsets{0};
  std::vector<std::uint32_t> ids;
  std::vector<std::int32_t> labels;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t count = 1 + rng.below(24);
    for (std::uint64_t k = 0; k < count; ++k)
      ids.push_back(static_cast<std::uint32_t>(rng.below(600)));
    offsets.push_back(static_cast<std::uint32_t>(ids.size()));
    labels.push_back(static_cast<std::int32_t>(rng.below(2)));
  }
  return Dataset::from_csr(offsets, ids, {}, labels, 262144);
}

}  // namespace

TEST_CASE("a_demo_round_trains_uploads_and_publishes_the_pinned_bytes", "[pin]") {
  const std::vector<std::uint8_t> model = initialize_model(kDemoPlan, /*seed=*/7);
  const Dataset first = leaf_data(11, 70);
  const Dataset second = leaf_data(12, 45);

  ExecuteOptions options;
  options.task_id = "1";
  const std::vector<std::uint8_t> upload_1 =
      execute(kDemoPlan, model.data(), model.size(), first, options);
  options.task_id = "2";
  const std::vector<std::uint8_t> upload_2 =
      execute(kDemoPlan, model.data(), model.size(), second, options);
  RoundAggregator round(parse_update_plan(std::string(kDemoPlan)), read_safetensors(model).tensors,
                        2);
  round.add_result(upload_1.data(), upload_1.size());
  round.add_result(upload_2.data(), upload_2.size());
  const std::vector<std::uint8_t> published = write_safetensors(round.next_model());

  CHECK(fnv1a64(model) == 0x894b6c371fee9bcaull);
  CHECK(fnv1a64(upload_1) == 0xc488d7803e3a070full);
  CHECK(fnv1a64(upload_2) == 0xfcd48108d5f49e57ull);
  CHECK(fnv1a64(published) == 0xaa10cd11c6b3ac18ull);
  CHECK(upload_1.size() == 32872);
  CHECK(published.size() == 16777592);
  CHECK(published != model);  // the round moved the model
}
