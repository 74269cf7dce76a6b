// The native engines of the training benchmark (scripts/bench.sh train). The Node driver
// tests/bench/train/train_bench.mjs writes each workload as a safetensors file and starts this
// binary as an engine process on it (a fresh one per round), so every engine trains on the same
// bytes and the driver can alternate engines run by run (method: train_bench.mjs).
//
//   fedleaf_train_bench serve native|reference DATA.safetensors
//       reads commands on stdin, one per line, and answers each with one JSON line:
//       "run S" whole training runs (all epochs) until their step loops used S seconds of CPU
//              (at least one): CPU and wall seconds of the step loops, examples/s (by CPU
//              time), session setup seconds, mean train loss
//       "digest" one more run: FNV-1a 64 of its result (the update bytes) and its mean loss
//       "stats" peak RSS and model bytes
//       "native" is fedleaf's TrainingSession; "reference" is the minimal reference loop below
//       (only for a sparse logistic regression trained with SGD)
//   fedleaf_train_bench featurize FIXTURE PLAN_JSON OUT.safetensors
//       the SpamAssassin fixture's train split, featurized with the plan's "features" section
//       by the core's text featurizer, as a workload file
//
// Workload file: tensors "offsets" [n + 1] and "ids" [nnz] (I32, CSR), "labels" [n] (I32),
// optional "weights" [nnz] (F32); metadata "plan" (plan JSON), "num_features", "workload" — or,
// for a multi-input plan (workload d), one set of tensors per input (read_multi_input).
// Timed: TrainingSession::step() until done (no model decode, no update encode).
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/data/input_columns.h"
#include "core/data/seeded_random.h"
#include "core/features/text_features.h"
#include "core/model/embedding_bag.h"
#include "core/train/executor.h"
#include "core/train/plan.h"
#include "core/train/training_session.h"
#include "core/wire/safetensors.h"
#include "tests/fixtures/spamassassin_fixture.h"

using namespace fedleaf::core;

namespace {

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

template <class T, class U>
std::vector<T> tensor_values(const NamedTensors& tensors, const std::string& name) {
  const DenseTensor& t = std::get<DenseTensor>(tensors.at(name));
  const U* data = t.data<U>();
  return std::vector<T>(data, data + t.size());
}

// FNV-1a, 64 bits: train_bench.mjs computes the same over the wasm engines' results.
std::uint64_t fnv1a(const std::vector<std::uint8_t>& bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

// CPU time of this process (user + system), in seconds: what runs are timed with (see the
// method in train_bench.mjs).
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Workload {
  std::string plan_json;
  Plan plan;
  Dataset data;
  std::vector<std::uint8_t> model;
};

// A multi-input workload file (workload d, wide_deep_workload.mjs): per input
// "inputs/<name>/offsets" and "inputs/<name>/ids" (I32) or "inputs/<name>/dense" (F32 [n, width]),
// and metadata "inputs", a JSON list of {"name", "kind", "num_features" | "width"}.
Dataset read_multi_input(const SafetensorsFile& file, std::vector<std::int32_t> labels) {
  const nlohmann::json list = nlohmann::json::parse(file.metadata.at("inputs"));
  std::vector<InputColumns> inputs;
  for (const nlohmann::json& entry : list) {
    InputColumns c;
    c.name = entry.at("name").get<std::string>();
    const std::string prefix = "inputs/" + c.name + "/";
    if (entry.at("kind").get<std::string>() == "dense") {
      c.kind = InputKind::kDense;
      c.width = entry.at("width").get<std::size_t>();
      c.dense = tensor_values<float, float>(file.tensors, prefix + "dense");
    } else {
      c.kind = InputKind::kSparseIds;
      c.offsets = tensor_values<std::uint32_t, std::int32_t>(file.tensors, prefix + "offsets");
      c.ids = tensor_values<std::uint32_t, std::int32_t>(file.tensors, prefix + "ids");
      c.num_features = entry.at("num_features").get<std::uint32_t>();
    }
    inputs.push_back(std::move(c));
  }
  return Dataset::from_inputs(std::move(inputs), std::move(labels));
}

Workload read_workload(const std::string& path) {
  const std::vector<std::uint8_t> bytes = read_file(path);
  const SafetensorsFile file = read_safetensors(bytes);
  const std::string plan = file.metadata.at("plan");
  std::vector<std::int32_t> labels =
      tensor_values<std::int32_t, std::int32_t>(file.tensors, "labels");
  if (file.metadata.count("inputs") != 0) {
    return Workload{plan, parse_plan(plan), read_multi_input(file, std::move(labels)),
                    initialize_model(plan, 1)};
  }
  std::vector<std::uint32_t> offsets =
      tensor_values<std::uint32_t, std::int32_t>(file.tensors, "offsets");
  std::vector<std::uint32_t> ids = tensor_values<std::uint32_t, std::int32_t>(file.tensors, "ids");
  std::vector<float> weights;
  if (file.tensors.count("weights")) weights = tensor_values<float, float>(file.tensors, "weights");
  const auto num_features =
      static_cast<std::uint32_t>(std::stoul(file.metadata.at("num_features")));
  return Workload{plan, parse_plan(plan),
                  Dataset::from_csr(std::move(offsets), std::move(ids), std::move(weights),
                                    std::move(labels), num_features),
                  initialize_model(plan, 1)};
}

// The minimal reference loop: the same SGD logistic regression (same batches of the same
// shuffled order, loss averaged over the batch) over the same CSR data, in plain C++ over a
// full-vocabulary weight vector. The machine's practical limit for workload (a).
bool reference_applies(const Plan& plan) {
  const LayerSpec& layer = plan.model.layers.front();
  const auto* bag = dynamic_cast<const EmbeddingBagConfig*>(layer.config.get());
  return plan.model.layers.size() == 1 && bag != nullptr && bag->dim == 1 &&
         bag->combiner == Combiner::kSum && plan.model.loss == LossType::kSigmoidCrossEntropy &&
         plan.train->optimizer.type == OptimizerType::kSgd && plan.train->clip_norm == 0.0f;
}

double reference_loop(const Workload& w, const std::vector<std::uint32_t>& global_ids,
                      std::vector<float>& weight) {
  const TrainSpec& train = *w.plan.train;
  const std::uint32_t* offsets = w.data.offsets().data();
  const std::uint32_t* ids = global_ids.data();
  const std::int32_t* labels = w.data.labels().data();
  const std::size_t n = w.data.size();
  std::vector<float> step(train.batch_size);
  double loss = 0.0;
  for (std::size_t epoch = 0; epoch < train.epochs; ++epoch) {
    const std::vector<std::uint32_t> order = shuffled_order(n, mix_seed(train.shuffle_seed, epoch));
    for (std::size_t begin = 0; begin < n; begin += train.batch_size) {
      const std::size_t count = std::min(train.batch_size, n - begin);
      const float lr = train.optimizer.learning_rate / static_cast<float>(count);
      for (std::size_t b = 0; b < count; ++b) {
        const std::uint32_t i = order[begin + b];
        float z = 0.0f;
        for (std::uint32_t j = offsets[i]; j < offsets[i + 1]; ++j) z += weight[ids[j]];
        const float y = static_cast<float>(labels[i]);
        const float e = std::exp(-std::fabs(z));
        loss += static_cast<double>(std::fmax(z, 0.0f) - z * y + std::log1p(e));
        step[b] = lr * ((z >= 0.0f ? 1.0f : e) / (1.0f + e) - y);
      }
      for (std::size_t b = 0; b < count; ++b) {
        const std::uint32_t i = order[begin + b];
        for (std::uint32_t j = offsets[i]; j < offsets[i + 1]; ++j) weight[ids[j]] -= step[b];
      }
    }
  }
  return loss / static_cast<double>(n * train.epochs);
}

int serve(const std::string& engine, const std::string& path) {
  const Workload w = read_workload(path);
  const bool reference = engine == "reference";
  if (!reference && engine != "native") throw std::runtime_error("unknown engine " + engine);
  if (reference && !reference_applies(w.plan)) {
    throw std::runtime_error("the reference loop needs a sparse logistic regression with sgd");
  }
  const std::size_t examples = w.data.size() * w.plan.train->epochs;
  // The reference loop indexes a full-vocabulary weight vector with the ids as given.
  const std::vector<std::uint32_t> global_ids =
      reference ? w.data.global_ids() : std::vector<std::uint32_t>{};
  using Clock = std::chrono::steady_clock;
  std::string command;
  while (std::getline(std::cin, command)) {
    if (command.rfind("run", 0) == 0) {
      // "run MIN_SECONDS": whole training runs until their step loops used MIN_SECONDS of CPU.
      const double min_seconds = command.size() > 4 ? std::stod(command.substr(4)) : 0.0;
      double setup = 0.0, loss = 0.0, seconds = 0.0, wall = 0.0;
      std::size_t runs = 0;
      do {
        double start_cpu = 0.0;
        Clock::time_point start_wall;
        if (reference) {
          std::vector<float> weight(w.plan.model.layers.front().owned_table->rows, 0.0f);
          start_cpu = cpu_seconds();
          start_wall = Clock::now();
          loss = reference_loop(w, global_ids, weight);
        } else {
          const auto t0 = Clock::now();
          TrainingSession session(w.plan_json, w.model.data(), w.model.size(), w.data);
          start_wall = Clock::now();
          setup = std::chrono::duration<double>(start_wall - t0).count();
          start_cpu = cpu_seconds();
          while (session.step()) {
          }
          loss = session.mean_loss();
        }
        seconds += cpu_seconds() - start_cpu;
        wall += std::chrono::duration<double>(Clock::now() - start_wall).count();
        ++runs;
      } while (seconds < min_seconds);
      std::printf(
          "{\"seconds\": %.9f, \"wall_seconds\": %.9f, \"runs\": %zu, "
          "\"examples_per_second\": %.1f, \"setup_seconds\": %.6f, \"mean_loss\": %.17g}\n",
          seconds, wall, runs, static_cast<double>(examples * runs) / seconds, setup, loss);
    } else if (command == "digest" && !reference) {
      TrainingSession session(w.plan_json, w.model.data(), w.model.size(), w.data);
      while (session.step()) {
      }
      std::printf("{\"result_digest\": \"%016llx\", \"mean_loss\": %.17g}\n",
                  static_cast<unsigned long long>(fnv1a(session.result())), session.mean_loss());
    } else if (command == "stats") {
      rusage usage{};
      getrusage(RUSAGE_SELF, &usage);
      std::printf("{\"engine\": \"%s\", \"peak_rss_bytes\": %ld, \"model_bytes\": %zu}\n",
                  reference ? "reference_loop" : "native", usage.ru_maxrss * 1024L, w.model.size());
    } else {
      throw std::runtime_error("unknown command '" + command + "'");
    }
    std::fflush(stdout);
  }
  return 0;
}

// The SpamAssassin fixture's train split (format: tests/fixtures/make_spamassassin_fixture.mjs).
int featurize(const std::string& fixture, const std::string& plan, const std::string& out_path) {
  const fedleaf::test::SpamAssassinCorpus corpus =
      fedleaf::test::read_spamassassin_fixture(fixture).train;
  const std::string& texts = corpus.texts;
  const std::vector<std::uint32_t>& text_offsets = corpus.offsets;
  const std::vector<std::int32_t>& labels = corpus.labels;
  const TextFeatureOptions features = text_features_from_plan(plan);
  const auto start = std::chrono::steady_clock::now();
  const Dataset data = build_hashed_text_dataset(texts.data(), texts.size(), text_offsets.data(),
                                                 labels.size(), labels.data(), features);
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;

  const auto i32_tensor = [](const std::vector<std::uint32_t>& v) {
    DenseTensor t = DenseTensor::zeros(DType::I32, {v.size()});
    std::int32_t* d = t.data<std::int32_t>();
    for (std::size_t i = 0; i < v.size(); ++i) d[i] = static_cast<std::int32_t>(v[i]);
    return t;
  };
  NamedTensors tensors;
  tensors.emplace("offsets", i32_tensor(data.offsets()));
  tensors.emplace("ids", i32_tensor(data.global_ids()));
  DenseTensor label_tensor = DenseTensor::zeros(DType::I32, {data.size()});
  std::copy(data.labels().begin(), data.labels().end(), label_tensor.data<std::int32_t>());
  tensors.emplace("labels", std::move(label_tensor));
  if (!data.weights().empty()) {
    DenseTensor w = DenseTensor::zeros(DType::F32, {data.weights().size()});
    std::copy(data.weights().begin(), data.weights().end(), w.data<float>());
    tensors.emplace("weights", std::move(w));
  }
  const std::vector<std::uint8_t> bytes =
      write_safetensors(tensors, {{"plan", plan},
                                  {"num_features", std::to_string(data.num_features())},
                                  {"workload", "spamassassin"}});
  std::ofstream out(out_path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + out_path);
  std::printf("{\"examples\": %zu, \"featurize_seconds\": %.6f}\n", data.size(), seconds.count());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "serve" && argc == 4) return serve(argv[2], argv[3]);
    if (mode == "featurize" && argc == 5) return featurize(argv[2], argv[3], argv[4]);
    std::fprintf(stderr,
                 "usage: fedleaf_train_bench serve native|reference DATA.safetensors\n"
                 "       fedleaf_train_bench featurize FIXTURE PLAN_JSON OUT.safetensors\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fedleaf_train_bench: %s\n", e.what());
    return 1;
  }
}
