// Training a Keras Dense that reads a sparse input — embedding_bag "sum" with "use_bias" — in a
// wide & deep graph: the bias trains as a dense tensor next to the row-sparse table (fused SGD
// included), compact-table sessions equal lazy training of the full tables, and the result bytes
// are pinned (this suite also runs under wasm, baseline and SIMD: the same constants).
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/data/batch.h"
#include "core/features/murmur3.h"
#include "core/model/model.h"
#include "core/train/executor.h"
#include "core/train/forward_over_dataset.h"
#include "core/train/optimizer.h"
#include "core/wire/safetensors.h"
#include "tests/core/train/full_model_reference.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::random_sparse_input;

namespace {

// x: a tf-idf row (weighted ids, some rows empty) read by "wide" (Dense(4, relu) on the sparse
// input) and by "lin" (a linear Dense(1) on it); ids: a mean embedding. The deep part and the
// linear part add into the logit.
std::string dense_on_sparse_plan(const std::string& optimizer) {
  return R"({"model": {
      "inputs": {"x": "sparse_ids", "ids": "sparse_ids"},
      "layers": [
        {"type": "embedding_bag", "name": "wide", "input": "x", "vocab": 60, "dim": 4,
         "combiner": "sum", "use_bias": true, "init_scale": 0.3},
        {"type": "relu", "name": "wide_relu"},
        {"type": "embedding_bag", "name": "emb", "input": "ids", "vocab": 40, "dim": 3},
        {"type": "concatenate", "name": "j", "inputs": ["wide_relu", "emb"]},
        {"type": "dense", "name": "deep", "units": 1},
        {"type": "embedding_bag", "name": "lin", "input": "x", "vocab": 60, "dim": 1,
         "combiner": "sum", "use_bias": true, "init_scale": 0.3},
        {"type": "add", "name": "logit", "inputs": ["deep", "lin"]}],
      "output": "logit", "loss": "sigmoid_cross_entropy"},
    "train": {"optimizer": )" +
         optimizer + R"(, "epochs": 2, "batch_size": 4, "shuffle_seed": 3},
    "updates": {
      "wide/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
      "wide/bias": {"encoding": "dense", "aggregator": "weighted_mean"},
      "emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
      "deep/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
      "deep/bias": {"encoding": "dense", "aggregator": "weighted_mean"},
      "lin/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
      "lin/bias": {"encoding": "dense", "aggregator": "weighted_mean"}}})";
}

Dataset dense_on_sparse_data(std::uint64_t seed, std::size_t n) {
  SeededRandom rng(seed);
  std::vector<InputColumns> inputs;
  inputs.push_back(random_sparse_input("x", rng, n, 60, 4, true));
  inputs.push_back(random_sparse_input("ids", rng, n, 40, 3, false));
  std::vector<std::int32_t> labels(n);
  for (auto& l : labels) l = static_cast<std::int32_t>(rng.below(2));
  return Dataset::from_inputs(std::move(inputs), labels);
}

const char* kAdam = R"({"type": "adam", "learning_rate": 0.05})";
const char* kSgd = R"({"type": "sgd", "learning_rate": 0.2})";

}  // namespace

TEST_CASE("dense_on_sparse_trains_its_bias_as_a_dense_tensor", "[dense_on_sparse]") {
  for (const char* optimizer : {kAdam, kSgd}) {
    INFO(optimizer);
    const std::string plan = dense_on_sparse_plan(optimizer);
    const auto model = initialize_model(plan, 5);
    const Dataset data = dense_on_sparse_data(7, 18);
    const SafetensorsFile result =
        read_safetensors(execute(plan, model.data(), model.size(), data));
    for (const char* name : {"wide/bias", "lin/bias"}) {
      INFO(name);
      const DenseTensor& bias = std::get<DenseTensor>(result.tensors.at(name));
      CHECK(bias.shape() == Shape{std::string(name) == "wide/bias" ? 4u : 1u});
      const float* b = bias.data<float>();
      CHECK(std::any_of(b, b + bias.size(), [](float v) { return v != 0.0f; }));
    }
    const auto& wide = std::get<RowSparseTensor>(result.tensors.at("wide/weight"));
    CHECK(wide.indices().size() == data.distinct_ids(0).rows().size());
  }
}

TEST_CASE("fused_sgd_keeps_the_embedding_bias_gradient", "[dense_on_sparse]") {
  // Fused SGD steps the table inside its backward pass; the bias is a dense parameter the
  // optimizer steps, so its gradient must be the same as without fusion.
  const std::string plan_json = dense_on_sparse_plan(kSgd);
  const Plan plan = parse_plan(plan_json);
  const Dataset data = dense_on_sparse_data(9, 6);
  std::vector<std::vector<float>> bias_gradients;
  for (const bool fused : {false, true}) {
    Parameters params = fedleaf::test::initial_parameters(plan_json, 4);
    Model model(plan.model, params, data.size());
    if (fused) model.fuse_sparse_sgd(0.2f);
    std::vector<std::vector<std::uint32_t>> global;
    BatchGatherer gather(data, global_feed_sources(plan.model, data, global));
    const auto order = fedleaf::test::identity_order(data.size());
    model.forward_backward(gather.gather(order.data(), order.size()));
    for (const ParameterGradient& g : model.gradients()) {
      if (g.name == "wide/bias" || g.name == "lin/bias") bias_gradients.push_back(g.values);
    }
  }
  REQUIRE(bias_gradients.size() == 4);
  CHECK(bias_gradients[0] == bias_gradients[2]);
  CHECK(bias_gradients[1] == bias_gradients[3]);
  CHECK(std::any_of(bias_gradients[0].begin(), bias_gradients[0].end(),
                    [](float v) { return v != 0.0f; }));
  CHECK(bias_gradients[1][0] != 0.0f);
}

TEST_CASE("dense_on_sparse_compact_training_equals_lazy_training_of_the_full_tables",
          "[dense_on_sparse]") {
  for (const char* optimizer : {kAdam, kSgd}) {
    INFO(optimizer);
    const std::string plan_json = dense_on_sparse_plan(optimizer);
    fedleaf::test::check_result_equals_full_model_training(plan_json, dense_on_sparse_data(11, 13),
                                                           2, 2, 3, 4);
  }
}

TEST_CASE("dense_on_sparse_result_bytes_are_pinned_across_platforms", "[dense_on_sparse]") {
  // The same constants natively and under wasm (baseline and SIMD kernels agree bit for bit).
  const Dataset data = dense_on_sparse_data(2, 21);
  const std::string adam = dense_on_sparse_plan(kAdam);
  const auto adam_model = initialize_model(adam, 1);
  const auto adam_result =
      execute(adam, adam_model.data(), adam_model.size(), data, {"task-sparse"});
  CHECK(murmur3_32(adam_result.data(), adam_result.size(), 0) == 3340732345u);
  const std::string sgd = dense_on_sparse_plan(kSgd);
  const auto sgd_model = initialize_model(sgd, 1);
  const auto sgd_result = execute(sgd, sgd_model.data(), sgd_model.size(), data, {"task-sparse"});
  CHECK(murmur3_32(sgd_result.data(), sgd_result.size(), 0) == 1691075643u);
}
