#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/train/executor.h"
#include "core/train/predict.h"
#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

// emb (vocab 30, dim 4, mean) → dense 5 tanh → dense 3, softmax; evaluation batches of 4 so that
// a dataset of 11 examples spans three batches, the last one partial.
const char* kSoftmaxPlan = R"({"model": {"inputs": {"t": "sparse_ids"}, "layers": [
    {"type": "embedding_bag", "name": "emb", "vocab": 30, "dim": 4, "combiner": "mean",
     "init_scale": 0.8},
    {"type": "dense", "name": "h", "units": 5, "activation": "tanh"},
    {"type": "dense", "name": "out", "units": 3}], "loss": "softmax_cross_entropy"},
  "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}},
  "updates": {"emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"}},
  "eval": {"batch_size": 4}})";

// A sparse logistic regression: emb (vocab 20, dim 1, sum) → dense 1, sigmoid loss.
const char* kSigmoidPlan = R"({"model": {"inputs": {"t": "sparse_ids"}, "layers": [
    {"type": "embedding_bag", "name": "emb", "vocab": 20, "dim": 1, "combiner": "sum",
     "init_scale": 1.0},
    {"type": "dense", "name": "out", "units": 1}], "loss": "sigmoid_cross_entropy"},
  "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}},
  "updates": {"out/weight": {"encoding": "dense", "aggregator": "weighted_mean"}}})";

std::vector<double> values_of(const Parameters& p, const std::string& name) {
  const DenseTensor& t = p.at(name);
  return std::vector<double>(t.data<float>(), t.data<float>() + t.size());
}

// Bag of example `ex` the dense way: x[v] = combined weight of id v.
std::vector<double> dense_bag(const Dataset& d, std::size_t ex, std::size_t vocab, bool mean) {
  std::vector<double> x(vocab, 0.0);
  double abs_sum = 0.0;
  const std::vector<std::uint32_t> ids = d.global_ids();
  for (std::uint32_t j = d.offsets()[ex]; j < d.offsets()[ex + 1]; ++j) {
    const double w = d.weights().empty() ? 1.0 : d.weights()[j];
    x[ids[j]] += w;
    abs_sum += std::fabs(w);
  }
  if (mean) {
    for (double& v : x) v = abs_sum > 0 ? v / abs_sum : 0.0;
  }
  return x;
}

// softmax(tanh(x E W1 + b1) W2 + b2) in double, over the whole [vocab, dim] table.
std::vector<double> softmax_reference(const Parameters& p, const Dataset& d) {
  const std::size_t vocab = 30, dim = 4, hidden = 5, classes = 3;
  const auto e = values_of(p, "emb/weight"), w1 = values_of(p, "h/weight"),
             b1 = values_of(p, "h/bias"), w2 = values_of(p, "out/weight"),
             b2 = values_of(p, "out/bias");
  std::vector<double> out;
  for (std::size_t ex = 0; ex < d.size(); ++ex) {
    const std::vector<double> x = dense_bag(d, ex, vocab, /*mean=*/true);
    std::vector<double> a(dim, 0.0), h(hidden), z(classes);
    for (std::size_t v = 0; v < vocab; ++v)
      for (std::size_t k = 0; k < dim; ++k) a[k] += x[v] * e[v * dim + k];
    for (std::size_t u = 0; u < hidden; ++u) {
      double s = b1[u];
      for (std::size_t k = 0; k < dim; ++k) s += a[k] * w1[k * hidden + u];
      h[u] = std::tanh(s);
    }
    double denom = 0.0;
    for (std::size_t c = 0; c < classes; ++c) {
      z[c] = b2[c];
      for (std::size_t u = 0; u < hidden; ++u) z[c] += h[u] * w2[u * classes + c];
      denom += std::exp(z[c]);
    }
    for (std::size_t c = 0; c < classes; ++c) out.push_back(std::exp(z[c]) / denom);
  }
  return out;
}

void check_close(const std::vector<float>& got, const std::vector<double>& expected) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(expected[i]).margin(1e-6));
  }
}

}  // namespace

TEST_CASE("predict_softmax_probabilities_match_a_dense_reference", "[predict]") {
  const auto model = initialize_model(kSoftmaxPlan, 4);
  const Dataset data = fedleaf::test::random_sparse_dataset(21, 11, 30, 6, true, 3);

  const Predictions p = predict(kSoftmaxPlan, model.data(), model.size(), data);

  CHECK(p.num_classes == 3);
  check_close(p.probabilities,
              softmax_reference(fedleaf::test::initial_parameters(kSoftmaxPlan, 4), data));
}

TEST_CASE("predict_sigmoid_gives_two_classes_that_match_a_dense_reference", "[predict]") {
  const auto model = initialize_model(kSigmoidPlan, 2);
  const Dataset data = fedleaf::test::random_sparse_dataset(8, 9, 20, 5, true, 2);
  const Parameters params = fedleaf::test::initial_parameters(kSigmoidPlan, 2);
  const auto e = values_of(params, "emb/weight"), w = values_of(params, "out/weight"),
             b = values_of(params, "out/bias");
  std::vector<double> expected;
  for (std::size_t ex = 0; ex < data.size(); ++ex) {
    const std::vector<double> x = dense_bag(data, ex, 20, /*mean=*/false);
    double a = 0.0;
    for (std::size_t v = 0; v < 20; ++v) a += x[v] * e[v];
    const double prob = 1.0 / (1.0 + std::exp(-(a * w[0] + b[0])));
    expected.push_back(1.0 - prob);
    expected.push_back(prob);
  }

  const Predictions p = predict(kSigmoidPlan, model.data(), model.size(), data);

  CHECK(p.num_classes == 2);
  check_close(p.probabilities, expected);
}

TEST_CASE("predict_argmax_accuracy_equals_the_evaluate_accuracy", "[predict]") {
  const auto model = initialize_model(kSoftmaxPlan, 9);
  const Dataset data = fedleaf::test::random_sparse_dataset(30, 40, 30, 5, false, 3);
  std::string eval_plan = kSoftmaxPlan;
  eval_plan.replace(0, 1, R"({"kind": "evaluate", )");
  const auto evaluated = read_safetensors(execute(eval_plan, model.data(), model.size(), data));

  const Predictions p = predict(kSoftmaxPlan, model.data(), model.size(), data);

  std::size_t correct = 0;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const float* row = p.probabilities.data() + i * 3;
    const auto best = static_cast<std::int32_t>(std::max_element(row, row + 3) - row);
    if (best == data.labels()[i]) ++correct;
  }
  CHECK(static_cast<double>(correct) / 40.0 ==
        Approx(std::stod(evaluated.metadata.at("accuracy"))));
}

TEST_CASE("predict_does_not_depend_on_labels", "[predict]") {
  const auto model = initialize_model(kSoftmaxPlan, 5);
  const Dataset a = Dataset::from_csr({0, 2, 3}, {4, 9, 9}, {}, {0, 0}, 30);
  const Dataset b = Dataset::from_csr({0, 2, 3}, {4, 9, 9}, {}, {2, 1}, 30);

  CHECK(predict(kSoftmaxPlan, model.data(), model.size(), a).probabilities ==
        predict(kSoftmaxPlan, model.data(), model.size(), b).probabilities);
}

TEST_CASE("predict_takes_a_plan_with_only_its_model", "[predict]") {
  const char* model_only = R"({"model": {"inputs": {"t": "sparse_ids"}, "layers": [
      {"type": "embedding_bag", "name": "emb", "vocab": 20, "dim": 1, "combiner": "sum",
       "init_scale": 1.0},
      {"type": "dense", "name": "out", "units": 1}], "loss": "sigmoid_cross_entropy"}})";
  const auto model = initialize_model(kSigmoidPlan, 2);
  const Dataset data = fedleaf::test::random_sparse_dataset(8, 9, 20, 5, true, 2);

  const Predictions p = predict(model_only, model.data(), model.size(), data);

  CHECK(p.num_classes == 2);
  CHECK(p.probabilities == predict(kSigmoidPlan, model.data(), model.size(), data).probabilities);
}

TEST_CASE("predict_rejects_models_and_data_that_do_not_fit_the_plan", "[predict]") {
  const auto model = initialize_model(kSoftmaxPlan, 1);
  const Dataset data = fedleaf::test::random_sparse_dataset(13, 5, 30, 3, false, 3);
  NamedTensors tensors = read_safetensors(model).tensors;

  NamedTensors missing = tensors;
  missing.erase("h/bias");
  const auto missing_bytes = write_safetensors(missing);
  CHECK_THROWS_MATCHES(
      predict(kSoftmaxPlan, missing_bytes.data(), missing_bytes.size(), data),
      fedleaf::InvalidInput,
      MessageContains("model: missing tensor 'h/bias' declared by plan.model.layers[1]"));

  NamedTensors fewer_rows = tensors;
  fewer_rows["emb/weight"] = DenseTensor::zeros(DType::F32, {10, 4});
  const auto fewer_bytes = write_safetensors(fewer_rows);
  CHECK_THROWS_MATCHES(predict(kSoftmaxPlan, fewer_bytes.data(), fewer_bytes.size(), data),
                       fedleaf::InvalidInput,
                       MessageContains("model tensor 'emb/weight': shape [10, 4] differs from "
                                       "[30, 4] declared by plan.model.layers[0]"));

  NamedTensors sparse = tensors;
  sparse.erase("emb/weight");
  sparse.emplace("emb/weight",
                 RowSparseTensor(RowIndices{1}, DenseTensor::zeros(DType::F32, {1, 4}),
                                 DenseShape{30, 4}, "emb/weight"));
  const auto sparse_bytes = write_safetensors(sparse);
  CHECK_THROWS_MATCHES(predict(kSoftmaxPlan, sparse_bytes.data(), sparse_bytes.size(), data),
                       fedleaf::InvalidInput,
                       MessageContains("model tensor 'emb/weight': expected a dense tensor"));

  const Dataset big_ids = Dataset::from_csr({0, 1}, {30}, {}, {0});
  CHECK_THROWS_MATCHES(
      predict(kSoftmaxPlan, model.data(), model.size(), big_ids), fedleaf::InvalidInput,
      MessageContains("id 30 of example 0 is not below plan.model.layers[0].vocab 30"));
  const std::vector<std::uint8_t> garbage{1, 2, 3};
  CHECK_THROWS_AS(predict(kSoftmaxPlan, garbage.data(), garbage.size(), data),
                  fedleaf::InvalidInput);
}
