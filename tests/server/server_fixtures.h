// Shared fixtures of the server tests: a small plan, its model, train/evaluate results as a leaf
// would upload them, and a dense reference of the aggregate.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/aggregation/updates/update_plan.h"
#include "core/wire/safetensors.h"
#include "server/repository/population_spec.h"
#include "server/store/store.h"

namespace fedleaf::test {

// out/weight [3, 2] dense weighted_mean, emb/weight [10, 2] row_sparse mean_over_contributors,
// out/bias [2] carried over unchanged.
inline const char* kTestPlan =
    R"({"model": {"inputs": {"tokens": "sparse_ids"},
                  "layers": [{"type": "embedding_bag", "name": "emb", "input": "tokens",
                              "vocab": 10, "dim": 2, "combiner": "mean"},
                             {"type": "dense", "name": "out", "units": 2}],
                  "loss": "softmax_cross_entropy"},
        "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}, "epochs": 1,
                  "batch_size": 4},
        "updates": {"emb/weight": {"encoding": "row_sparse",
                                   "aggregator": "mean_over_contributors"},
                    "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"}}})";

// kTestPlan with "download_values": "f16" for emb/weight and out/weight (out/bias stays F32).
inline const char* kF16DownloadPlan =
    R"({"model": {"inputs": {"tokens": "sparse_ids"},
                  "layers": [{"type": "embedding_bag", "name": "emb", "input": "tokens",
                              "vocab": 10, "dim": 2, "combiner": "mean"},
                             {"type": "dense", "name": "out", "units": 2}],
                  "loss": "softmax_cross_entropy"},
        "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}, "epochs": 1,
                  "batch_size": 4},
        "updates": {"emb/weight": {"encoding": "row_sparse",
                                   "aggregator": "mean_over_contributors",
                                   "download_values": "f16"},
                    "out/weight": {"encoding": "dense", "aggregator": "weighted_mean",
                                   "download_values": "f16"}}})";

// Population `id` as a store holds it: 3 rounds of 4 clients (2 reports close a round at its 60 s
// deadline), 5 s leases, 5 train and 1 evaluate task a round, created at t = 100; running at
// round 0. Client token hash "hash-<id>".
inline server::PopulationRecord test_population_record(const std::string& id,
                                                       std::string plan_json = "{}") {
  server::PopulationRecord p;
  p.id = id;
  p.plan_json = std::move(plan_json);
  p.client_token_hash = "hash-" + id;
  p.settings.rounds = 3;
  p.settings.clients_per_round = 4;
  p.settings.min_reports = 2;
  p.settings.round_deadline_s = 60;
  p.settings.lease_s = 5;
  p.settings.train_tasks_per_round = 5;
  p.settings.eval_tasks_per_round = 1;
  p.created_at = 100;
  return p;
}

inline std::string to_string(const std::vector<std::uint8_t>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// Dense F32 tensor of `shape` with value(i) at flat index i.
template <class F>
core::DenseTensor dense_f32(const core::Shape& shape, F value) {
  core::DenseTensor t = core::DenseTensor::zeros(core::DType::F32, shape);
  for (std::size_t i = 0; i < t.size(); ++i) t.data<float>()[i] = static_cast<float>(value(i));
  return t;
}

inline core::NamedTensors test_model_tensors() {
  core::NamedTensors model;
  model.emplace("emb/weight", dense_f32({10, 2}, [](std::size_t i) { return 0.01 * double(i); }));
  model.emplace("out/weight", dense_f32({3, 2}, [](std::size_t i) { return 0.1 * double(i); }));
  model.emplace("out/bias", dense_f32({2}, [](std::size_t) { return 0.5; }));
  return model;
}

inline std::string test_model_bytes() {
  return to_string(core::write_safetensors(test_model_tensors()));
}

// A train result: emb/weight rows `rows` each filled with `row_value`, out/weight filled with
// `dense_value`.
inline std::string train_result(const std::vector<std::int64_t>& rows, float row_value,
                                float dense_value, int num_examples, double loss = 0.5) {
  core::RowIndices idx = core::RowIndices::from_shape({rows.size()});
  for (std::size_t i = 0; i < rows.size(); ++i) idx(i) = rows[i];
  core::NamedTensors t;
  t.emplace("emb/weight",
            core::RowSparseTensor(
                idx, dense_f32({rows.size(), 2}, [&](std::size_t) { return row_value; }), {10, 2}));
  t.emplace("out/weight", dense_f32({3, 2}, [&](std::size_t) { return dense_value; }));
  return to_string(core::write_safetensors(t, {{"kind", "train"},
                                               {"num_examples", std::to_string(num_examples)},
                                               {"loss", std::to_string(loss)}}));
}

inline std::string eval_result(int num_examples, double loss, double accuracy) {
  return to_string(core::write_safetensors({}, {{"kind", "evaluate"},
                                                {"num_examples", std::to_string(num_examples)},
                                                {"loss", std::to_string(loss)},
                                                {"accuracy", std::to_string(accuracy)}}));
}

inline server::PopulationSpec test_spec(const std::string& id, int rounds, int clients_per_round,
                                        int min_reports) {
  server::PopulationSpec spec;
  spec.id = id;
  spec.plan_json = kTestPlan;
  spec.initial_model = test_model_bytes();
  spec.settings.rounds = rounds;
  spec.settings.clients_per_round = clients_per_round;
  spec.settings.min_reports = min_reports;
  spec.settings.round_deadline_s = 100;
  spec.settings.lease_s = 10;
  spec.settings.train_tasks_per_round = clients_per_round;
  return spec;
}

struct TrainUpload {
  std::vector<std::int64_t> rows;
  float row_value;
  float dense_value;
  int num_examples;
};

// Dense reference of round 1's model after `uploads` in round 0: out/weight += weighted mean,
// emb/weight rows += mean over the clients that sent the row (rows at least min_contributors
// clients sent: the plan's default, kDefaultMinContributors, unless the population's min_reports
// is less), out/bias unchanged.
inline std::map<std::string, std::vector<float>> reference_next_model(
    const std::vector<TrainUpload>& uploads,
    std::uint64_t min_contributors = core::kDefaultMinContributors) {
  core::NamedTensors model = test_model_tensors();
  std::map<std::string, std::vector<float>> out;
  for (const char* name : {"emb/weight", "out/weight", "out/bias"}) {
    const auto& t = std::get<core::DenseTensor>(model.at(name));
    out[name].assign(t.data<float>(), t.data<float>() + t.size());
  }
  double total = 0;
  double dense_sum = 0;
  std::vector<double> row_sum(10, 0), row_weight(10, 0), row_reports(10, 0);
  // The plan's default robust clip in a population's first round (adaptive, starting at
  // {"rms": kDefaultClipRms}, core/aggregation/updates/update_plan.h): an update whose sent values
  // all equal v has RMS |v|, so clipping clamps v to [-kDefaultClipRms, kDefaultClipRms].
  const auto clip = [](float v) {
    return std::max(-core::kDefaultClipRms, std::min(core::kDefaultClipRms, double(v)));
  };
  for (const TrainUpload& u : uploads) {
    total += u.num_examples;
    dense_sum += u.num_examples * clip(u.dense_value);
    for (std::int64_t r : u.rows) {
      row_sum[r] += u.num_examples * clip(u.row_value);
      row_weight[r] += u.num_examples;
      row_reports[r] += 1;
    }
  }
  for (float& v : out["out/weight"]) v += static_cast<float>(dense_sum / total);
  for (std::size_t r = 0; r < 10; ++r) {
    // A row fewer reports sent than min_contributors stays unchanged.
    if (row_weight[r] == 0 || row_reports[r] < double(min_contributors)) continue;
    for (int d = 0; d < 2; ++d) out["emb/weight"][r * 2 + d] += float(row_sum[r] / row_weight[r]);
  }
  return out;
}

inline std::map<std::string, std::vector<float>> decode_dense(const std::string& bytes) {
  auto file =
      core::read_safetensors(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, tensor] : file.tensors) {
    const auto& t = std::get<core::DenseTensor>(tensor);
    out[name].assign(t.data<float>(), t.data<float>() + t.size());
  }
  return out;
}

inline bool models_close(const std::map<std::string, std::vector<float>>& a,
                         const std::map<std::string, std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, values] : a) {
    const auto it = b.find(name);
    if (it == b.end() || it->second.size() != values.size()) return false;
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (std::fabs(values[i] - it->second[i]) > 1e-5f) return false;
    }
  }
  return true;
}

}  // namespace fedleaf::test
