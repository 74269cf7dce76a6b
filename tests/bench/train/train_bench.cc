// The native engine of the training benchmark (scripts/bench.sh train). The Node driver
// tests/bench/train/train_bench.mjs writes each workload as a safetensors file and runs this
// binary once per workload, so every engine trains on the same bytes.
//
//   fedleaf_train_bench run DATA.safetensors REPETITIONS
//       one JSON line: examples/s of the step loop (median of REPETITIONS after one warm-up
//       run), session setup time, mean train loss, peak RSS
//   fedleaf_train_bench featurize FIXTURE PLAN_JSON OUT.safetensors
//       the SpamAssassin fixture's train split, featurized with the plan's "features" section
//       by the core's text featurizer, as a workload file
//
// Workload file: tensors "offsets" [n + 1] and "ids" [nnz] (I32, CSR), "labels" [n] (I32),
// optional "weights" [nnz] (F32); metadata "plan" (plan JSON), "num_features", "workload".
// Timed: TrainingSession::step() until done (no model decode, no update encode).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/safetensors.h"
#include "core/train/executor.h"
#include "core/train/plan.h"
#include "core/train/text_features.h"
#include "core/train/training_session.h"
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int run(const std::string& path, int repetitions) {
  const std::vector<std::uint8_t> bytes = read_file(path);
  const SafetensorsFile file = read_safetensors(bytes);
  const std::string plan = file.metadata.at("plan");
  std::vector<std::uint32_t> offsets =
      tensor_values<std::uint32_t, std::int32_t>(file.tensors, "offsets");
  std::vector<std::uint32_t> ids = tensor_values<std::uint32_t, std::int32_t>(file.tensors, "ids");
  std::vector<float> weights;
  if (file.tensors.count("weights")) weights = tensor_values<float, float>(file.tensors, "weights");
  std::vector<std::int32_t> labels =
      tensor_values<std::int32_t, std::int32_t>(file.tensors, "labels");
  const auto num_features =
      static_cast<std::uint32_t>(std::stoul(file.metadata.at("num_features")));
  const Dataset data = Dataset::from_csr(std::move(offsets), std::move(ids), std::move(weights),
                                         std::move(labels), num_features);
  const std::vector<std::uint8_t> model = initialize_model(plan, 1);

  const std::size_t examples = data.size() * parse_plan(plan).train->epochs;

  using Clock = std::chrono::steady_clock;
  std::vector<double> rates, setups;
  double loss = 0.0;
  for (int rep = 0; rep <= repetitions; ++rep) {  // rep 0 warms up
    const auto t0 = Clock::now();
    TrainingSession session(plan, model.data(), model.size(), data);
    const auto t1 = Clock::now();
    while (session.step()) {
    }
    const auto t2 = Clock::now();
    loss = session.mean_loss();
    if (rep > 0) {
      rates.push_back(static_cast<double>(examples) /
                      std::chrono::duration<double>(t2 - t1).count());
      setups.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("{\"engine\": \"native\", \"examples_per_second\": %.1f, \"repetitions\": [",
              median(rates));
  for (std::size_t i = 0; i < rates.size(); ++i) std::printf("%s%.1f", i ? ", " : "", rates[i]);
  std::printf(
      "], \"setup_seconds\": %.6f, \"mean_loss\": %.9g, \"peak_rss_bytes\": %ld, "
      "\"model_bytes\": %zu}\n",
      median(setups), loss, usage.ru_maxrss * 1024L, model.size());
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
  tensors.emplace("ids", i32_tensor(data.ids()));
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
    if (mode == "run" && argc == 4) return run(argv[2], std::stoi(argv[3]));
    if (mode == "featurize" && argc == 5) return featurize(argv[2], argv[3], argv[4]);
    std::fprintf(stderr,
                 "usage: fedleaf_train_bench run DATA.safetensors REPETITIONS\n"
                 "       fedleaf_train_bench featurize FIXTURE PLAN_JSON OUT.safetensors\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fedleaf_train_bench: %s\n", e.what());
    return 1;
  }
}
