// Helpers shared by the training tests: random datasets, models built from plan JSON.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/dataset.h"
#include "core/data/seeded_random.h"
#include "core/model/model.h"
#include "core/train/executor.h"
#include "core/train/plan.h"
#include "core/wire/safetensors.h"

namespace fedleaf::test {

// The example plan of docs/design.md, verbatim.
inline const char* kDesignPlan = R"({"model": {"inputs": {"tokens": "sparse_ids"},
           "layers": [{"type": "embedding_bag", "name": "emb", "input": "tokens",
                       "vocab": 262144, "dim": 16, "combiner": "mean"},
                      {"type": "dense", "name": "out", "units": 2}],
           "loss": "softmax_cross_entropy"},
 "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1},
           "epochs": 1, "batch_size": 32},
 "updates": {"emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
             "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
             "out/bias":   {"encoding": "dense", "aggregator": "weighted_mean"}}})";

// `n` examples of 0..max_ids ids below `vocab` (duplicates possible), weights in [0.25, 2)
// when `weighted`, labels below `classes`.
inline core::Dataset random_sparse_dataset(std::uint64_t seed, std::size_t n, std::uint32_t vocab,
                                           std::uint32_t max_ids, bool weighted,
                                           std::int32_t classes) {
  core::SeededRandom rng(seed);
  std::vector<std::uint32_t> offsets{0};
  std::vector<std::uint32_t> ids;
  std::vector<float> weights;
  std::vector<std::int32_t> labels;
  for (std::size_t i = 0; i < n; ++i) {
    const auto count = static_cast<std::size_t>(rng.below(max_ids + 1));
    for (std::size_t k = 0; k < count; ++k) {
      ids.push_back(static_cast<std::uint32_t>(rng.below(vocab)));
      weights.push_back(weighted ? 0.25f + 1.75f * rng.uniform() : 1.0f);
    }
    offsets.push_back(static_cast<std::uint32_t>(ids.size()));
    labels.push_back(static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(classes))));
  }
  return core::Dataset::from_csr(offsets, ids, weights, labels, vocab);
}

inline core::Dataset random_dense_dataset(std::uint64_t seed, std::size_t n, std::size_t width,
                                          std::int32_t classes) {
  core::SeededRandom rng(seed);
  std::vector<float> values(n * width);
  std::vector<std::int32_t> labels(n);
  for (float& v : values) v = 2.0f * rng.uniform() - 1.0f;
  for (auto& l : labels)
    l = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(classes)));
  return core::Dataset::from_dense(values, width, labels);
}

// The columns of sparse input `name`: `n` examples of 0..max_ids ids below `vocab`, weights in
// [0.25, 2) when `weighted`.
inline core::InputColumns random_sparse_input(const std::string& name, core::SeededRandom& rng,
                                              std::size_t n, std::uint32_t vocab,
                                              std::uint32_t max_ids, bool weighted) {
  core::InputColumns c;
  c.name = name;
  c.num_features = vocab;
  for (std::size_t i = 0; i < n; ++i) {
    const auto count = static_cast<std::size_t>(rng.below(max_ids + 1));
    for (std::size_t k = 0; k < count; ++k) {
      c.ids.push_back(static_cast<std::uint32_t>(rng.below(vocab)));
      if (weighted) c.weights.push_back(0.25f + 1.75f * rng.uniform());
    }
    c.offsets.push_back(static_cast<std::uint32_t>(c.ids.size()));
  }
  return c;
}

// The columns of dense input `name`: `n` rows of `width` values in [-1, 1).
inline core::InputColumns random_dense_input(const std::string& name, core::SeededRandom& rng,
                                             std::size_t n, std::size_t width) {
  core::InputColumns c;
  c.name = name;
  c.kind = core::InputKind::kDense;
  c.width = width;
  c.dense.resize(n * width);
  for (float& v : c.dense) v = 2.0f * rng.uniform() - 1.0f;
  return c;
}

// The parameters of initialize_model(plan, seed), as the Model takes them.
inline core::Parameters initial_parameters(const std::string& plan_json, std::uint64_t seed) {
  const std::vector<std::uint8_t> bytes = core::initialize_model(plan_json, seed);
  core::SafetensorsFile file = core::read_safetensors(bytes);
  core::Parameters params;
  for (auto& [name, tensor] : file.tensors) {
    params.emplace(name, std::get<core::DenseTensor>(std::move(tensor)));
  }
  return params;
}

// `count` ids drawn uniformly below `range` (duplicates likely).
inline std::vector<std::uint32_t> random_ids(core::SeededRandom& rng, std::uint64_t count,
                                             std::uint64_t range) {
  std::vector<std::uint32_t> ids(static_cast<std::size_t>(count));
  for (auto& id : ids) id = static_cast<std::uint32_t>(rng.below(range));
  return ids;
}

// Sorted, deduplicated ids: the reference of CompactRows and a dataset's distinct ids.
inline std::vector<std::uint32_t> sorted_unique(std::vector<std::uint32_t> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// Every example of `dataset`, in order, as one batch (views into `gatherer`).
inline std::vector<std::uint32_t> identity_order(std::size_t n) {
  std::vector<std::uint32_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
  return order;
}

}  // namespace fedleaf::test
