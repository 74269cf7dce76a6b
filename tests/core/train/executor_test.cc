#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "core/train/executor.h"
#include "core/train/metrics.h"
#include "core/train/optimizer.h"
#include "core/train/training_session.h"
#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"
#include "tests/core/raw_safetensors.h"
#include "tests/core/to_dense.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::kDesignPlan;
using fedleaf::test::MessageContains;

namespace {

// emb (vocab 30, dim 4) → dense 5 tanh → dense 3, softmax; every tensor's update in `encoding`
// (the embedding's in `emb_encoding`).
std::string small_plan(const std::string& optimizer, const std::string& emb_encoding,
                       int epochs = 2) {
  return R"({"model": {"inputs": {"t": "sparse_ids"}, "layers": [
      {"type": "embedding_bag", "name": "emb", "vocab": 30, "dim": 4, "combiner": "mean",
       "init_scale": 0.5},
      {"type": "dense", "name": "h", "units": 5, "activation": "tanh"},
      {"type": "dense", "name": "out", "units": 3}], "loss": "softmax_cross_entropy"},
    "train": {"optimizer": )" +
         optimizer + R"(, "epochs": )" + std::to_string(epochs) +
         R"(, "batch_size": 4, "shuffle_seed": 3},
    "updates": {"emb/weight": {"encoding": ")" +
         emb_encoding + R"(", "aggregator": "mean_over_contributors"},
                "h/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
                "h/bias": {"encoding": "dense", "aggregator": "weighted_mean"},
                "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
                "out/bias": {"encoding": "dense", "aggregator": "weighted_mean"}}})";
}

const char* kSgd = R"({"type": "sgd", "learning_rate": 0.5})";
const char* kAdam = R"({"type": "adam", "learning_rate": 0.05})";

SafetensorsFile run(const std::string& plan, const std::vector<std::uint8_t>& model,
                    const Dataset& data, const std::string& task_id = "") {
  ExecuteOptions options;
  options.task_id = task_id;
  const auto bytes = execute(plan, model.data(), model.size(), data, options);
  return read_safetensors(bytes, {/*require_finite=*/true, /*require_canonical=*/true});
}

std::vector<float> dense_values(const Tensor& t) {
  DenseTensor d;
  if (const auto* dense = std::get_if<DenseTensor>(&t)) d = *dense;
  if (const auto* rows = std::get_if<RowSparseTensor>(&t)) d = fedleaf::test::to_dense(*rows);
  if (const auto* coo = std::get_if<SparseTensor>(&t)) d = fedleaf::test::to_dense(*coo);
  return std::vector<float>(d.data<float>(), d.data<float>() + d.size());
}

std::vector<float> values_of(const Parameters& p, const std::string& name) {
  const DenseTensor& t = p.at(name);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
}

// The small plan's model trained with SGD the dense way, in double: the batch as a dense
// [batch, vocab] matrix X (mean combiner folded in), H = tanh(X E W1 + b1), Z = H W2 + b2.
struct DenseReference {
  std::size_t vocab = 30, dim = 4, hidden = 5, classes = 3;
  std::vector<double> e, w1, b1, w2, b2;

  explicit DenseReference(const Parameters& p) {
    const auto copy = [&](const std::string& n) {
      const auto v = values_of(p, n);
      return std::vector<double>(v.begin(), v.end());
    };
    e = copy("emb/weight");
    w1 = copy("h/weight");
    b1 = copy("h/bias");
    w2 = copy("out/weight");
    b2 = copy("out/bias");
  }

  void step(const Dataset& d, const std::uint32_t* examples, std::size_t n, double lr) {
    std::vector<double> x(n * vocab, 0.0), a(n * dim, 0.0), h(n * hidden), z(n * classes);
    const std::vector<std::uint32_t> ids = d.global_ids();
    for (std::size_t b = 0; b < n; ++b) {
      const std::uint32_t ex = examples[b];
      double abs_sum = 0;
      for (std::uint32_t j = d.offsets()[ex]; j < d.offsets()[ex + 1]; ++j) {
        const double w = d.weights().empty() ? 1.0 : d.weights()[j];
        x[b * vocab + ids[j]] += w;
        abs_sum += std::fabs(w);
      }
      for (std::size_t v = 0; v < vocab; ++v) x[b * vocab + v] *= abs_sum > 0 ? 1 / abs_sum : 0;
      for (std::size_t k = 0; k < dim; ++k)
        for (std::size_t v = 0; v < vocab; ++v) a[b * dim + k] += x[b * vocab + v] * e[v * dim + k];
      for (std::size_t u = 0; u < hidden; ++u) {
        double s = b1[u];
        for (std::size_t k = 0; k < dim; ++k) s += a[b * dim + k] * w1[k * hidden + u];
        h[b * hidden + u] = std::tanh(s);
      }
      for (std::size_t c = 0; c < classes; ++c) {
        double s = b2[c];
        for (std::size_t u = 0; u < hidden; ++u) s += h[b * hidden + u] * w2[u * classes + c];
        z[b * classes + c] = s;
      }
    }
    std::vector<double> ge(e.size(), 0), gw1(w1.size(), 0), gb1(b1.size(), 0), gw2(w2.size(), 0),
        gb2(b2.size(), 0);
    for (std::size_t b = 0; b < n; ++b) {
      const std::int32_t label = d.labels()[examples[b]];
      double m = z[b * classes];
      for (std::size_t c = 1; c < classes; ++c) m = std::max(m, z[b * classes + c]);
      double denom = 0;
      for (std::size_t c = 0; c < classes; ++c) denom += std::exp(z[b * classes + c] - m);
      std::vector<double> gz(classes), gh(hidden, 0), gpre(hidden), ga(dim, 0);
      for (std::size_t c = 0; c < classes; ++c) {
        gz[c] =
            (std::exp(z[b * classes + c] - m) / denom - (c == static_cast<std::size_t>(label))) /
            static_cast<double>(n);
        gb2[c] += gz[c];
        for (std::size_t u = 0; u < hidden; ++u) {
          gw2[u * classes + c] += h[b * hidden + u] * gz[c];
          gh[u] += w2[u * classes + c] * gz[c];
        }
      }
      for (std::size_t u = 0; u < hidden; ++u) {
        gpre[u] = gh[u] * (1 - h[b * hidden + u] * h[b * hidden + u]);
        gb1[u] += gpre[u];
        for (std::size_t k = 0; k < dim; ++k) {
          gw1[k * hidden + u] += a[b * dim + k] * gpre[u];
          ga[k] += w1[k * hidden + u] * gpre[u];
        }
      }
      for (std::size_t v = 0; v < vocab; ++v)
        for (std::size_t k = 0; k < dim; ++k) ge[v * dim + k] += x[b * vocab + v] * ga[k];
    }
    const auto sgd = [lr](std::vector<double>& p, const std::vector<double>& g) {
      for (std::size_t i = 0; i < p.size(); ++i) p[i] -= lr * g[i];
    };
    sgd(e, ge);
    sgd(w1, gw1);
    sgd(b1, gb1);
    sgd(w2, gw2);
    sgd(b2, gb2);
  }
};

void check_close(const std::vector<float>& got, const std::vector<double>& expected, double tol) {
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == Approx(expected[i]).margin(tol));
  }
}

}  // namespace

TEST_CASE("design_example_plan_trains_and_returns_the_requested_encodings", "[executor]") {
  const auto model = initialize_model(kDesignPlan, 1);
  const Dataset data = fedleaf::test::random_sparse_dataset(5, 50, 262144, 12, false, 2);

  const SafetensorsFile result = run(kDesignPlan, model, data, "task-9");

  REQUIRE(result.tensors.size() == 3);
  const auto& emb = std::get<RowSparseTensor>(result.tensors.at("emb/weight"));
  const std::vector<std::uint32_t> global = data.global_ids();
  const std::set<std::uint32_t> ids(global.begin(), global.end());
  const std::vector<std::int64_t> expected_rows(ids.begin(), ids.end());
  CHECK(std::vector<std::int64_t>(emb.indices().begin(), emb.indices().end()) == expected_rows);
  CHECK(emb.dense_shape() == DenseShape{262144, 16});
  CHECK(std::get<DenseTensor>(result.tensors.at("out/weight")).shape() == Shape{16, 2});
  CHECK(std::get<DenseTensor>(result.tensors.at("out/bias")).shape() == Shape{2});
  CHECK(result.metadata.at("kind") == "train");
  CHECK(result.metadata.at("num_examples") == "50");
  CHECK(result.metadata.at("task_id") == "task-9");
  const double loss = std::stod(result.metadata.at("loss"));
  CHECK(loss > 0.0);
  CHECK(loss < 1.0);
  CHECK(std::stod(result.metadata.at("accuracy")) >= 0.0);
  CHECK(result.metadata.count("auc") == 0);
}

TEST_CASE("execute_and_initialize_model_are_byte_deterministic", "[executor]") {
  const std::string plan = small_plan(kAdam, "row_sparse");
  const auto model = initialize_model(plan, 7);
  const Dataset data = fedleaf::test::random_sparse_dataset(6, 23, 30, 6, true, 3);

  const auto first = execute(plan, model.data(), model.size(), data);
  const auto second = execute(plan, model.data(), model.size(), data);

  CHECK(first == second);
  CHECK(initialize_model(plan, 7) == model);
  CHECK(initialize_model(plan, 8) != model);
}

TEST_CASE("update_encodings_agree_and_coo_holds_only_changed_elements", "[executor]") {
  const auto model = initialize_model(small_plan(kSgd, "dense"), 2);
  const Dataset data = fedleaf::test::random_sparse_dataset(7, 17, 30, 5, true, 3);

  const SafetensorsFile dense = run(small_plan(kSgd, "dense"), model, data);
  const SafetensorsFile rows = run(small_plan(kSgd, "row_sparse"), model, data);
  const SafetensorsFile coo = run(small_plan(kSgd, "coo"), model, data);

  const auto reference = dense_values(dense.tensors.at("emb/weight"));
  CHECK(dense_values(rows.tensors.at("emb/weight")) == reference);
  CHECK(dense_values(coo.tensors.at("emb/weight")) == reference);
  const auto& sparse = std::get<SparseTensor>(coo.tensors.at("emb/weight"));
  const std::size_t nonzero = static_cast<std::size_t>(
      std::count_if(reference.begin(), reference.end(), [](float v) { return v != 0.0f; }));
  CHECK(sparse.nnz() == nonzero);
  CHECK(nonzero > 0);
  CHECK(dense.tensors.at("out/weight").index() == 0);
}

TEST_CASE("sparse_training_equals_a_dense_reference_on_random_models", "[executor]") {
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    INFO("seed " << seed);
    const std::string plan = small_plan(kSgd, "dense");
    const auto model = initialize_model(plan, seed);
    const Dataset data = fedleaf::test::random_sparse_dataset(seed + 10, 14, 30, 6, seed != 2, 3);

    const SafetensorsFile result = run(plan, model, data);

    const Parameters initial = fedleaf::test::initial_parameters(plan, seed);
    DenseReference ref(initial);
    for (std::size_t epoch = 0; epoch < 2; ++epoch) {
      const auto order = shuffled_order(data.size(), mix_seed(3, epoch));
      for (std::size_t begin = 0; begin < order.size(); begin += 4) {
        ref.step(data, order.data() + begin, std::min<std::size_t>(4, order.size() - begin), 0.5);
      }
    }
    const auto trained = [&](const std::string& name) {
      std::vector<float> v = values_of(initial, name);
      const std::vector<float> delta = dense_values(result.tensors.at(name));
      for (std::size_t i = 0; i < v.size(); ++i) v[i] += delta[i];
      return v;
    };
    check_close(trained("emb/weight"), ref.e, 1e-4);
    check_close(trained("h/weight"), ref.w1, 1e-4);
    check_close(trained("h/bias"), ref.b1, 1e-4);
    check_close(trained("out/weight"), ref.w2, 1e-4);
    check_close(trained("out/bias"), ref.b2, 1e-4);
  }
}

TEST_CASE("compact_table_training_equals_lazy_adam_on_the_full_table", "[executor]") {
  const std::string plan_json = small_plan(kAdam, "row_sparse", 3);
  const auto model = initialize_model(plan_json, 4);
  const Dataset data = fedleaf::test::random_sparse_dataset(8, 19, 30, 4, true, 3);

  const SafetensorsFile result = run(plan_json, model, data);

  const Plan plan = parse_plan(plan_json);
  const Parameters initial = fedleaf::test::initial_parameters(plan_json, 4);
  Parameters params = initial;
  Model full(plan.model, params, 4);
  Optimizer opt(plan.train->optimizer, full.gradients());
  BatchGatherer gather(data, BatchIds::kGlobal);
  for (std::size_t epoch = 0; epoch < 3; ++epoch) {
    const auto order = shuffled_order(data.size(), mix_seed(3, epoch));
    for (std::size_t begin = 0; begin < order.size(); begin += 4) {
      full.forward_backward(
          gather.gather(order.data() + begin, std::min<std::size_t>(4, order.size() - begin)));
      opt.apply(full.gradients());
    }
  }
  for (const char* name : {"emb/weight", "h/weight", "out/bias"}) {
    INFO(name);
    const std::vector<float> before = values_of(initial, name);
    const std::vector<float> after = values_of(params, name);
    std::vector<double> expected_delta(before.size());
    for (std::size_t i = 0; i < before.size(); ++i)
      expected_delta[i] = double(after[i]) - before[i];
    check_close(dense_values(result.tensors.at(name)), expected_delta, 1e-6);
  }
}

TEST_CASE("evaluate_reports_loss_accuracy_and_auc", "[executor]") {
  const std::string plan = R"({"kind": "evaluate", "model": {"inputs": {"t": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "lr", "vocab": 50, "dim": 1,
                  "combiner": "sum", "initializer": "zeros"}],
      "loss": "sigmoid_cross_entropy"}, "eval": {"batch_size": 7}})";
  const auto model = initialize_model(plan, 1);
  const Dataset data = fedleaf::test::random_sparse_dataset(9, 40, 50, 5, false, 2);
  const auto zeros = static_cast<double>(std::count(data.labels().begin(), data.labels().end(), 0));

  const SafetensorsFile result = run(plan, model, data, "eval-1");

  // A zero model predicts p = 1/2 everywhere: loss ln 2, class 0 predicted, all scores tied.
  CHECK(result.tensors.empty());
  CHECK(result.metadata.at("kind") == "evaluate");
  CHECK(result.metadata.at("num_examples") == "40");
  CHECK(std::stod(result.metadata.at("loss")) == Approx(std::log(2.0)));
  CHECK(std::stod(result.metadata.at("accuracy")) == Approx(zeros / 40.0));
  CHECK(std::stod(result.metadata.at("auc")) == Approx(0.5));
  CHECK(result.metadata.at("task_id") == "eval-1");
}

TEST_CASE("evaluate_auc_matches_the_model_scores", "[executor]") {
  const std::string train_plan = R"({"model": {"inputs": {"t": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "emb", "vocab": 50, "dim": 3},
                 {"type": "dense", "name": "out", "units": 2}],
      "loss": "softmax_cross_entropy"},
      "train": {"optimizer": {"type": "adam", "learning_rate": 0.1}, "epochs": 3},
      "updates": {"emb/weight": {"encoding": "dense", "aggregator": "weighted_mean"}}})";
  std::string eval_plan = train_plan;
  eval_plan.replace(eval_plan.find("{\"model\""), 1, R"({"kind": "evaluate", )");
  const auto model = initialize_model(train_plan, 3);
  const Dataset data = fedleaf::test::random_sparse_dataset(10, 60, 50, 5, false, 2);

  const SafetensorsFile result = run(eval_plan, model, data);

  Parameters params = fedleaf::test::initial_parameters(train_plan, 3);
  Model m(parse_plan(eval_plan).model, params, data.size());
  BatchGatherer gather(data, BatchIds::kGlobal);
  const auto order = fedleaf::test::identity_order(data.size());
  const LossSums sums = m.forward(gather.gather(order.data(), order.size()));
  std::vector<float> scores;
  for (std::size_t b = 0; b < data.size(); ++b)
    scores.push_back(m.outputs()[2 * b + 1] - m.outputs()[2 * b]);
  CHECK(std::stod(result.metadata.at("auc")) == Approx(binary_auc(scores, data.labels())));
  CHECK(std::stod(result.metadata.at("loss")) == Approx(sums.loss / 60.0));
  CHECK(std::stod(result.metadata.at("accuracy")) ==
        Approx(static_cast<double>(sums.correct) / 60.0));
}

TEST_CASE("dense_input_model_learns_a_separable_task", "[executor]") {
  const std::string plan = R"({"model": {"inputs": {"x": {"type": "dense", "dim": 3}},
      "layers": [{"type": "dense", "name": "h", "units": 8, "activation": "relu"},
                 {"type": "dense", "name": "out", "units": 2}],
      "loss": "softmax_cross_entropy"},
      "train": {"optimizer": {"type": "momentum", "learning_rate": 0.1, "momentum": 0.9},
                "epochs": 10, "batch_size": 16, "clip_norm": 5.0},
      "updates": {"h/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
                  "h/bias": {"encoding": "dense", "aggregator": "weighted_mean"},
                  "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
                  "out/bias": {"encoding": "dense", "aggregator": "weighted_mean"}}})";
  std::string eval_plan = plan;
  eval_plan.replace(0, 1, R"({"kind": "evaluate", )");
  Dataset raw = fedleaf::test::random_dense_dataset(11, 200, 3, 2);
  std::vector<std::int32_t> labels;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    labels.push_back(raw.dense_values()[3 * i] + raw.dense_values()[3 * i + 1] > 0 ? 1 : 0);
  }
  const Dataset data = Dataset::from_dense(raw.dense_values(), 3, labels);
  const auto model = initialize_model(plan, 5);

  const SafetensorsFile update = run(plan, model, data);

  NamedTensors next = read_safetensors(model).tensors;
  for (auto& [name, t] : next) {
    DenseTensor& d = std::get<DenseTensor>(t);
    const auto delta = dense_values(update.tensors.at(name));
    for (std::size_t i = 0; i < d.size(); ++i) d.data<float>()[i] += delta[i];
  }
  const auto next_bytes = write_safetensors(next);
  const SafetensorsFile before = run(eval_plan, model, data);
  const SafetensorsFile after = run(eval_plan, next_bytes, data);
  CHECK(std::stod(after.metadata.at("loss")) < std::stod(before.metadata.at("loss")));
  CHECK(std::stod(after.metadata.at("accuracy")) > 0.9);
}

TEST_CASE("training_session_steps_match_execute", "[executor]") {
  const std::string plan = small_plan(kSgd, "coo", 3);
  const auto model = initialize_model(plan, 6);
  const Dataset data = fedleaf::test::random_sparse_dataset(12, 10, 30, 4, false, 3);
  TrainingSession session(plan, model.data(), model.size(), data);
  CHECK(session.total_steps() == 9);  // 3 epochs x ceil(10 / 4)
  CHECK_THROWS_MATCHES(session.result(), fedleaf::InvalidInput,
                       MessageContains("result requested after 0 of 9 steps"));

  std::size_t steps = 0;
  while (session.step()) ++steps;

  CHECK(steps == 9);
  CHECK(session.done());
  CHECK_FALSE(session.step());
  CHECK(session.mean_loss() > 0.0);
  CHECK(session.result("t") == execute(plan, model.data(), model.size(), data, {"t"}));
}

// The small plan with a table of `vocab` rows.
std::string plan_with_vocab(const std::string& optimizer, const std::string& emb_encoding,
                            std::size_t vocab) {
  std::string plan = small_plan(optimizer, emb_encoding);
  const std::string from = R"("vocab": 30)";
  return plan.replace(plan.find(from), from.size(), R"("vocab": )" + std::to_string(vocab));
}

TEST_CASE("write_result_hands_the_sink_its_size_then_the_result_bytes_in_pieces", "[executor]") {
  for (const std::string encoding : {"dense", "row_sparse", "coo"}) {
    const std::string plan = plan_with_vocab(kAdam, encoding, 40000);  // a 640 kB dense update
    const auto model = initialize_model(plan, 6);
    const Dataset data = fedleaf::test::random_sparse_dataset(12, 300, 40000, 6, true, 3);
    TrainingSession session(plan, model.data(), model.size(), data);
    while (session.step()) {
    }
    std::vector<std::uint64_t> sizes;
    std::vector<std::uint8_t> bytes;
    std::size_t pieces = 0;

    session.write_result("t", ResultSink{[&](std::uint64_t size) { sizes.push_back(size); },
                                         [&](const std::uint8_t* piece, std::size_t size) {
                                           REQUIRE(sizes.size() == 1);
                                           bytes.insert(bytes.end(), piece, piece + size);
                                           ++pieces;
                                         }});

    REQUIRE(sizes.size() == 1);
    CHECK(sizes[0] == bytes.size());
    CHECK(bytes == session.result("t"));
    if (encoding == "dense") CHECK(pieces > 1);
  }
}

TEST_CASE("updates_of_a_large_table_agree_across_encodings_and_are_zero_where_untouched",
          "[executor]") {
  const Dataset data = fedleaf::test::random_sparse_dataset(13, 200, 30000, 5, false, 3);
  const auto model = initialize_model(plan_with_vocab(kSgd, "dense", 30000), 4);
  const SafetensorsFile dense = run(plan_with_vocab(kSgd, "dense", 30000), model, data);
  const SafetensorsFile rows = run(plan_with_vocab(kSgd, "row_sparse", 30000), model, data);
  const SafetensorsFile coo = run(plan_with_vocab(kSgd, "coo", 30000), model, data);

  const auto reference = dense_values(dense.tensors.at("emb/weight"));
  CHECK(dense_values(rows.tensors.at("emb/weight")) == reference);
  CHECK(dense_values(coo.tensors.at("emb/weight")) == reference);
  const std::vector<std::uint32_t> touched = data.distinct_ids().rows();
  std::vector<bool> is_touched(30000, false);
  for (std::uint32_t id : touched) is_touched[id] = true;
  for (std::size_t row = 0; row < 30000; ++row) {
    if (is_touched[row]) continue;
    for (std::size_t k = 0; k < 4; ++k) REQUIRE(reference[row * 4 + k] == 0.0f);
  }
  CHECK(std::get<RowSparseTensor>(rows.tensors.at("emb/weight")).num_rows() == touched.size());
}

TEST_CASE("execute_rejects_models_and_data_that_do_not_fit_the_plan", "[executor]") {
  const std::string plan = small_plan(kSgd, "dense");
  const auto model = initialize_model(plan, 1);
  const Dataset data = fedleaf::test::random_sparse_dataset(13, 5, 30, 3, false, 3);
  NamedTensors tensors = read_safetensors(model).tensors;

  NamedTensors missing = tensors;
  missing.erase("h/bias");
  const auto missing_bytes = write_safetensors(missing);
  CHECK_THROWS_MATCHES(
      execute(plan, missing_bytes.data(), missing_bytes.size(), data), fedleaf::InvalidInput,
      MessageContains("model: missing tensor 'h/bias' declared by plan.model.layers[1]"));

  NamedTensors wrong = tensors;
  wrong["out/weight"] = DenseTensor::zeros(DType::F32, {5, 4});
  const auto wrong_bytes = write_safetensors(wrong);
  CHECK_THROWS_MATCHES(execute(plan, wrong_bytes.data(), wrong_bytes.size(), data),
                       fedleaf::InvalidInput,
                       MessageContains("model tensor 'out/weight': shape [5, 4] differs from [5, "
                                       "3] declared by plan.model.layers[2]"));

  const Dataset big_ids = Dataset::from_csr({0, 1}, {30}, {}, {0});
  CHECK_THROWS_MATCHES(
      execute(plan, model.data(), model.size(), big_ids), fedleaf::InvalidInput,
      MessageContains("id 30 of example 0 is not below plan.model.layers[0].vocab 30"));
  // The first id out of range in data order is named, with its example (an empty one before it).
  const Dataset later_big_ids =
      Dataset::from_csr({0, 2, 2, 5}, {1, 2, 4, 40, 31}, {}, {0, 1, 0}, 64);
  CHECK_THROWS_MATCHES(
      execute(plan, model.data(), model.size(), later_big_ids), fedleaf::InvalidInput,
      MessageContains("id 40 of example 2 is not below plan.model.layers[0].vocab 30"));
  const Dataset bad_label = Dataset::from_csr({0, 1}, {3}, {}, {3});
  CHECK_THROWS_MATCHES(execute(plan, model.data(), model.size(), bad_label), fedleaf::InvalidInput,
                       MessageContains("label 3 of example 0 is invalid for plan.model.loss"));
  const Dataset dense = Dataset::from_dense({1, 2}, 2, {0});
  CHECK_THROWS_MATCHES(execute(plan, model.data(), model.size(), dense), fedleaf::InvalidInput,
                       MessageContains("dense rows, but plan.model.inputs.t is sparse_ids"));
  const Dataset empty = Dataset::from_csr({0}, {}, {}, {});
  CHECK_THROWS_MATCHES(execute(plan, model.data(), model.size(), empty), fedleaf::InvalidInput,
                       MessageContains("dataset: no examples"));
  const std::vector<std::uint8_t> garbage{1, 2, 3};
  CHECK_THROWS_AS(execute(plan, garbage.data(), garbage.size(), data), fedleaf::InvalidInput);
  std::string eval_plan = plan;
  eval_plan.replace(0, 1, R"({"kind": "evaluate", )");
  CHECK_THROWS_MATCHES(TrainingSession(eval_plan, model.data(), model.size(), data),
                       fedleaf::InvalidInput, MessageContains("plan.kind"));
}

// The model of `plan` (seed 1) with every float truncated to a 16-bit float of `half` (F16:
// the top 10 mantissa bits, values below 2^-14 flushed to zero; BF16: the top 16 bits), as raw
// safetensors bytes.
std::vector<std::uint8_t> half_float_model(const std::string& plan, DType half) {
  const SafetensorsFile f32 = read_safetensors(initialize_model(plan, 1));
  std::vector<fedleaf::test::RawArray> arrays;
  for (const auto& [name, tensor] : f32.tensors) {
    const auto& t = std::get<DenseTensor>(tensor);
    std::vector<std::uint16_t> bits(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) {
      std::uint32_t b;
      std::memcpy(&b, &t.data<float>()[i], 4);
      // F16 from the F32 fields (initial values lie below 2 in magnitude): sign, exponent
      // rebiased from 127 to 15, mantissa truncated to 10 bits.
      const std::uint32_t exponent = (b >> 23) & 0xff;
      const auto sign = static_cast<std::uint16_t>((b >> 16) & 0x8000);
      bits[i] =
          half == DType::BF16 ? static_cast<std::uint16_t>(b >> 16)
          : exponent <= 112
              ? sign
              : static_cast<std::uint16_t>(sign | ((exponent - 112) << 10) | ((b >> 13) & 0x3ff));
    }
    arrays.push_back({name, half, t.shape(), fedleaf::test::half_bytes(bits)});
  }
  return fedleaf::test::raw_safetensors(arrays);
}

TEST_CASE("training_from_an_f16_or_bf16_model_equals_training_from_its_f32_widening",
          "[executor]") {
  const std::string plan = small_plan(kAdam, "row_sparse");
  const Dataset data = fedleaf::test::random_sparse_dataset(4, 40, 30, 6, true, 3);
  for (DType half : {DType::F16, DType::BF16}) {
    const std::vector<std::uint8_t> stored = half_float_model(plan, half);
    const SafetensorsFile widened = read_safetensors(stored);
    const std::vector<std::uint8_t> f32 = write_safetensors(widened.tensors);

    CHECK(execute(plan, stored.data(), stored.size(), data, {}) ==
          execute(plan, f32.data(), f32.size(), data, {}));
    const std::string evaluate_plan = R"({"kind": "evaluate", )" + plan.substr(1);
    CHECK(execute(evaluate_plan, stored.data(), stored.size(), data, {}) ==
          execute(evaluate_plan, f32.data(), f32.size(), data, {}));
  }
}

TEST_CASE("training_rejects_an_f16_model_holding_an_infinity_naming_the_tensor", "[executor]") {
  const std::string plan = small_plan(kSgd, "row_sparse");
  std::vector<std::uint8_t> stored = half_float_model(plan, DType::F16);
  // The last array in the layout (2-byte arrays sorted by name) is out/weight; its last element
  // becomes +infinity.
  stored[stored.size() - 2] = 0x00;
  stored[stored.size() - 1] = 0x7c;
  const Dataset data = fedleaf::test::random_sparse_dataset(4, 8, 30, 6, false, 3);

  CHECK_THROWS_MATCHES(execute(plan, stored.data(), stored.size(), data, {}), fedleaf::InvalidInput,
                       MessageContains("'out/weight': a value is not finite"));
}

// Regression: a learning rate the plan accepts made every update value inf or NaN, and the leaf
// wrote them into a result the server then refused.
TEST_CASE("training_that_diverges_is_an_error_naming_why_not_a_non_finite_update", "[executor]") {
  const Dataset data = fedleaf::test::random_sparse_dataset(6, 23, 30, 6, true, 3);
  for (const char* optimizer : {R"({"type": "sgd", "learning_rate": 1e30})",
                                R"({"type": "momentum", "learning_rate": 1e30})"}) {
    const std::string plan = small_plan(optimizer, "row_sparse");
    const auto model = initialize_model(plan, 7);
    INFO(optimizer);
    CHECK_THROWS_MATCHES(execute(plan, model.data(), model.size(), data), fedleaf::InvalidInput,
                         MessageContains("training diverged"));
  }
}

// Regression: a sparse dataset whose examples hold no ids was refused as "dense rows".
TEST_CASE("a_sparse_dataset_without_ids_trains_on_empty_bags", "[executor]") {
  const std::string plan = small_plan(kSgd, "row_sparse", 1);
  const auto model = initialize_model(plan, 7);
  const Dataset data = Dataset::from_csr({0, 0, 0, 0}, {}, {}, {0, 1, 2}, 30);

  const SafetensorsFile result = run(plan, model, data);
  CHECK(std::get<RowSparseTensor>(result.tensors.at("emb/weight")).indices().size() == 0);
  CHECK(result.metadata.at("num_examples") == "3");
}
