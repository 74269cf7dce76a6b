// Multi-input datasets and training: Dataset::from_inputs, a table's compact rows over several
// inputs, batches with several feeds, and sessions training a graph with a shared table — one
// compact table per embedding table, row-sparse updates of exactly the rows its inputs touch,
// model:select per table, and the same bytes on every platform (this suite also runs under wasm).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/data/batch.h"
#include "core/features/murmur3.h"
#include "core/train/executor.h"
#include "core/train/forward_over_dataset.h"
#include "core/train/optimizer.h"
#include "core/train/predict.h"
#include "core/train/table_rows.h"
#include "core/train/training_session.h"
#include "core/wire/result_format.h"
#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"
#include "tests/core/train/full_model_reference.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;
using fedleaf::test::random_dense_input;
using fedleaf::test::random_sparse_input;

namespace {

InputColumns sparse(const std::string& name, std::vector<std::uint32_t> offsets,
                    std::vector<std::uint32_t> ids) {
  InputColumns c;
  c.name = name;
  c.offsets = std::move(offsets);
  c.ids = std::move(ids);
  return c;
}

InputColumns dense(const std::string& name, std::size_t width, std::vector<float> values) {
  InputColumns c;
  c.name = name;
  c.kind = InputKind::kDense;
  c.width = width;
  c.dense = std::move(values);
  return c;
}

// Two sparse inputs sharing table "tokens" (body: sum, subject: mean), a wide table on "cross",
// a dense input, concatenate → dense relu → dropout → dense, plus the wide logit.
std::string wide_deep_plan(const std::string& optimizer, int epochs = 2) {
  return R"({"model": {
      "inputs": {"body": "sparse_ids", "subject": "sparse_ids", "cross": "sparse_ids",
                 "numeric": {"type": "dense", "dim": 2}},
      "layers": [
        {"type": "embedding_bag", "name": "tokens", "input": "body", "vocab": 500, "dim": 4,
         "combiner": "sum", "init_scale": 0.3},
        {"type": "embedding_bag", "name": "subject_emb", "input": "subject", "table": "tokens"},
        {"type": "concatenate", "name": "deep_in", "inputs": ["tokens", "subject_emb", "numeric"]},
        {"type": "dense", "name": "h1", "units": 6, "activation": "relu"},
        {"type": "dropout", "name": "drop", "rate": 0.25, "seed": 3},
        {"type": "dense", "name": "deep", "units": 1},
        {"type": "embedding_bag", "name": "wide", "input": "cross", "vocab": 4096, "dim": 1,
         "combiner": "sum", "initializer": "zeros"},
        {"type": "add", "name": "logit", "inputs": ["deep", "wide"]}],
      "output": "logit", "loss": "sigmoid_cross_entropy"},
    "train": {"optimizer": )" +
         optimizer + R"(, "epochs": )" + std::to_string(epochs) + R"(, "batch_size": 4,
              "shuffle_seed": 5},
    "updates": {
      "tokens/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
      "wide/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
      "h1/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
      "h1/bias": {"encoding": "dense", "aggregator": "weighted_mean"},
      "deep/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
      "deep/bias": {"encoding": "dense", "aggregator": "weighted_mean"}}})";
}

// `subject_is_body`: the subject input repeats body's ids (the union is body's own rows).
Dataset wide_deep_data(std::uint64_t seed, std::size_t n, bool subject_is_body = false) {
  SeededRandom rng(seed);
  std::vector<InputColumns> inputs;
  inputs.push_back(random_sparse_input("body", rng, n, 300, 6, true));
  // Subject ids reach past body's (300..500): the shared table's rows are the union.
  inputs.push_back(random_sparse_input("subject", rng, n, 500, 3, false));
  if (subject_is_body) {
    inputs.back() = inputs.front();
    inputs.back().name = "subject";
  }
  inputs.push_back(random_sparse_input("cross", rng, n, 4096, 2, false));
  inputs.push_back(random_dense_input("numeric", rng, n, 2));
  std::vector<std::int32_t> labels(n);
  for (auto& l : labels) l = static_cast<std::int32_t>(rng.below(2));
  return Dataset::from_inputs(std::move(inputs), labels);
}

std::vector<std::uint32_t> union_rows(const Dataset& d, std::size_t i, std::size_t j) {
  std::vector<std::uint32_t> a = d.distinct_ids(i).rows();
  const std::vector<std::uint32_t> b = d.distinct_ids(j).rows();
  a.insert(a.end(), b.begin(), b.end());
  return fedleaf::test::sorted_unique(a);
}

std::vector<std::uint32_t> rows_of(const RowSparseTensor& t) {
  std::vector<std::uint32_t> rows;
  for (std::size_t r = 0; r < t.indices().size(); ++r) {
    rows.push_back(static_cast<std::uint32_t>(t.indices()(r)));
  }
  return rows;
}

// model:select's answer: each table in `tables` as the row-sparse tensor of its `rows`.
std::vector<std::uint8_t> select_tables(
    const std::vector<std::uint8_t>& model,
    const std::vector<std::pair<std::string, std::vector<std::uint32_t>>>& tables) {
  SafetensorsFile file = read_safetensors(model);
  for (const auto& [name, rows] : tables) {
    const DenseTensor table = std::get<DenseTensor>(file.tensors.at(name));
    const std::size_t dim = table.shape()[1];
    RowIndices indices = RowIndices::from_shape({rows.size()});
    DenseTensor values = DenseTensor::zeros(DType::F32, {rows.size(), dim});
    for (std::size_t r = 0; r < rows.size(); ++r) {
      indices(r) = rows[r];
      std::copy(table.data<float>() + rows[r] * dim, table.data<float>() + (rows[r] + 1) * dim,
                values.data<float>() + r * dim);
    }
    DenseShape shape{static_cast<std::int64_t>(table.shape()[0]), static_cast<std::int64_t>(dim)};
    file.tensors.erase(name);
    file.tensors.emplace(
        name, RowSparseTensor(std::move(indices), std::move(values), std::move(shape), name));
  }
  return write_safetensors(file.tensors, {{"round", "1"}});
}

}  // namespace

TEST_CASE("datasets_from_inputs_hold_named_inputs_labels_or_targets", "[multi_input]") {
  const Dataset d = Dataset::from_inputs(
      {sparse("body", {0, 2, 3}, {70, 3, 70}), dense("numeric", 2, {1, 2, 3, 4})}, {1, 0});
  CHECK(d.size() == 2);
  REQUIRE(d.num_inputs() == 2);
  CHECK(d.input_name(0) == "body");
  CHECK(d.is_sparse(0));
  CHECK(d.distinct_ids(0).rows() == std::vector<std::uint32_t>{3, 70});
  CHECK(d.compact_ids(0) == std::vector<std::uint32_t>{1, 0, 1});
  CHECK(d.global_ids(0) == std::vector<std::uint32_t>{70, 3, 70});
  CHECK_FALSE(d.is_sparse(1));
  CHECK(d.num_features(1) == 2);
  CHECK(d.dense_values(1) == std::vector<float>{1, 2, 3, 4});
  CHECK_FALSE(d.has_targets());

  const Dataset r =
      Dataset::from_inputs({dense("x", 1, {5, 6, 7})}, Dataset::Targets{{0.5f, 1, 2, 3, 4, 5}, 2});
  CHECK(r.size() == 3);
  CHECK(r.has_targets());
  CHECK(r.target_width() == 2);
  CHECK(r.labels().empty());
  const Dataset s = r.subset({2, 0});
  CHECK(s.targets() == std::vector<float>{4, 5, 0.5f, 1});
  CHECK(s.dense_values(0) == std::vector<float>{7, 5});
  CHECK(s.input_name(0) == "x");
  const Dataset t = d.subset({1, 1});
  CHECK(t.global_ids(0) == std::vector<std::uint32_t>{70, 70});
  CHECK(t.distinct_ids(0).rows() == std::vector<std::uint32_t>{70});
  CHECK(t.dense_values(1) == std::vector<float>{3, 4, 3, 4});
  CHECK(t.labels() == std::vector<std::int32_t>{0, 0});

  CHECK_THROWS_MATCHES(
      Dataset::from_inputs({sparse("a", {0, 1}, {1}), sparse("a", {0, 1}, {2})}, {0}),
      fedleaf::InvalidInput, MessageContains("input 'a' is given twice"));
  CHECK_THROWS_MATCHES(
      Dataset::from_inputs({sparse("a", {0, 1}, {1}), dense("b", 2, {1, 2, 3})}, {0}),
      fedleaf::InvalidInput, MessageContains("dataset input 'b': dense values has 3 entries"));
  CHECK_THROWS_MATCHES(Dataset::from_inputs({sparse("a", {0, 1, 1}, {1})}, {0}),
                       fedleaf::InvalidInput,
                       MessageContains("dataset input 'a': offsets has 3 entries"));
  CHECK_THROWS_MATCHES(
      Dataset::from_inputs({sparse("", {0, 1}, {1}), sparse("b", {0, 1}, {1})}, {0}),
      fedleaf::InvalidInput,
      MessageContains("dataset: an input has an empty name (only the input of a "
                      "one-input dataset may go unnamed)"));
  // The only input may go unnamed: the dataset from_csr makes.
  const Dataset unnamed = Dataset::from_inputs({sparse("", {0, 2}, {1, 5})}, {1});
  const Dataset csr = Dataset::from_csr({0, 2}, {1, 5}, {}, {1});
  CHECK(unnamed.input_name(0).empty());
  CHECK(unnamed.offsets() == csr.offsets());
  CHECK(unnamed.global_ids() == csr.global_ids());
  CHECK(unnamed.num_features() == csr.num_features());
  CHECK_THROWS_MATCHES(Dataset::from_inputs({}, std::vector<std::int32_t>{}), fedleaf::InvalidInput,
                       MessageContains("dataset: no inputs"));
  CHECK_THROWS_MATCHES(Dataset::from_inputs({dense("x", 1, {1})}, Dataset::Targets{{NAN}, 1}),
                       fedleaf::InvalidInput,
                       MessageContains("dataset: target 0 of example 0 is not finite"));
}

TEST_CASE("compact_rows_union_numbers_every_set_into_the_union", "[multi_input]") {
  std::vector<std::uint32_t> a{70, 3, 64, 3}, b{200, 3, 1000};
  const CompactRows ra = CompactRows::number_in_place(a, 2000);
  const CompactRows rb = CompactRows::number_in_place(b, 2000);
  std::vector<std::vector<std::uint32_t>> renumber;
  const CompactRows u = CompactRows::union_of({&ra, &rb}, &renumber);
  CHECK(u.rows() == std::vector<std::uint32_t>{3, 64, 70, 200, 1000});
  CHECK(u.end_row() == 1001);
  REQUIRE(renumber.size() == 2);
  CHECK(renumber[0] == std::vector<std::uint32_t>{0, 1, 2});  // 3, 64, 70
  CHECK(renumber[1] == std::vector<std::uint32_t>{0, 3, 4});  // 3, 200, 1000
  CHECK(CompactRows::union_of({&ra}, nullptr).rows() == ra.rows());
  CHECK(CompactRows::union_of({}, nullptr).size() == 0);
}

TEST_CASE("gatherers_fill_each_feed_renumbered_or_as_is", "[multi_input]") {
  const Dataset d = Dataset::from_inputs(
      {sparse("s", {0, 2, 3, 3}, {9, 4, 9}), dense("x", 1, {10, 20, 30})}, {0, 1, 0});
  const std::vector<std::uint32_t> map{5, 7};  // compact 0 (id 4) → 5, compact 1 (id 9) → 7
  BatchGatherer gather(d, {FeedSource{0, &map, 8}, FeedSource{1}, FeedSource{0}});
  const std::vector<std::uint32_t> order{2, 0};
  const Batch b = gather.gather(order.data(), 2);
  CHECK(b.size == 2);
  REQUIRE(b.num_feeds == 3);
  CHECK(b.labels[0] == 0);
  const Batch& ids = b.feeds[0];
  CHECK(std::vector<std::uint32_t>(ids.offsets, ids.offsets + 3) ==
        std::vector<std::uint32_t>{0, 0, 2});
  CHECK(std::vector<std::uint32_t>(ids.ids, ids.ids + 2) == std::vector<std::uint32_t>{7, 5});
  CHECK(ids.ids_below == 8);
  CHECK(std::vector<float>(b.feeds[1].dense, b.feeds[1].dense + 2) == std::vector<float>{30, 10});
  CHECK(std::vector<std::uint32_t>(b.feeds[2].ids, b.feeds[2].ids + 2) ==
        std::vector<std::uint32_t>{1, 0});
}

TEST_CASE("datasets_feed_a_graph_by_input_name", "[multi_input]") {
  const Plan plan = parse_plan(wide_deep_plan(R"({"type": "sgd", "learning_rate": 0.1})"));
  const Dataset data = wide_deep_data(1, 5);
  CHECK(dataset_inputs_for(plan.model, data) == std::vector<std::size_t>{0, 2, 3, 1});
  CHECK_NOTHROW(check_dataset_fits(plan.model, data));
  SeededRandom rng(2);
  std::vector<InputColumns> missing;
  missing.push_back(random_sparse_input("body", rng, 2, 300, 2, false));
  CHECK_THROWS_MATCHES(check_dataset_fits(plan.model, Dataset::from_inputs(missing, {0, 1})),
                       fedleaf::InvalidInput,
                       MessageContains("dataset: no input 'cross' (plan.model.inputs.cross)"));
  std::vector<InputColumns> extra;
  for (const char* name : {"body", "subject", "cross", "typo"}) {
    extra.push_back(random_sparse_input(name, rng, 2, 300, 2, false));
  }
  extra.push_back(random_dense_input("numeric", rng, 2, 2));
  CHECK_THROWS_MATCHES(check_dataset_fits(plan.model, Dataset::from_inputs(extra, {0, 1})),
                       fedleaf::InvalidInput,
                       MessageContains("dataset: input 'typo' is no input of plan.model.inputs"));
  std::vector<InputColumns> wide_ids;
  wide_ids.push_back(sparse("body", {0, 1}, {1}));
  wide_ids.push_back(sparse("subject", {0, 1}, {600}));
  wide_ids.push_back(sparse("cross", {0, 1}, {1}));
  wide_ids.push_back(dense("numeric", 2, {0, 0}));
  CHECK_THROWS_MATCHES(check_dataset_fits(plan.model, Dataset::from_inputs(wide_ids, {0})),
                       fedleaf::InvalidInput,
                       MessageContains("dataset: id 600 of example 0 of input 'subject' is not "
                                       "below plan.model.layers[0].vocab 500"));
  CHECK_THROWS_MATCHES(
      check_dataset_fits(plan.model, fedleaf::test::random_sparse_dataset(1, 3, 30, 3, false, 2)),
      fedleaf::InvalidInput,
      MessageContains("dataset: one unnamed input, but plan.model.inputs has 4"));
}

TEST_CASE("graph_training_updates_exactly_the_rows_each_tables_inputs_touch", "[multi_input]") {
  const std::string plan = wide_deep_plan(R"({"type": "adam", "learning_rate": 0.05})");
  const auto model = initialize_model(plan, 9);
  const Dataset data = wide_deep_data(4, 23);
  const SafetensorsFile result = read_safetensors(execute(plan, model.data(), model.size(), data));
  const auto& tokens = std::get<RowSparseTensor>(result.tensors.at("tokens/weight"));
  CHECK(rows_of(tokens) == union_rows(data, 0, 1));  // body ∪ subject
  const auto& wide = std::get<RowSparseTensor>(result.tensors.at("wide/weight"));
  CHECK(rows_of(wide) == data.distinct_ids(2).rows());
  CHECK(std::get<DenseTensor>(result.tensors.at("h1/weight")).shape() == Shape{10, 6});
  CHECK(result.metadata.at("num_examples") == "23");
}

TEST_CASE("graph_training_on_compact_tables_equals_lazy_training_on_the_full_tables",
          "[multi_input]") {
  for (const bool subject_is_body : {false, true}) {
    for (const char* optimizer : {R"({"type": "sgd", "learning_rate": 0.2})",
                                  R"({"type": "adam", "learning_rate": 0.05})"}) {
      INFO(optimizer << (subject_is_body ? ", subject = body" : ""));
      const std::string plan_json = wide_deep_plan(optimizer, 3);
      fedleaf::test::check_result_equals_full_model_training(
          plan_json, wide_deep_data(6, 17, subject_is_body), 2, 3, 5, 4);
    }
  }
}

TEST_CASE("graph_training_on_selected_tables_gives_the_bytes_of_the_full_tables", "[multi_input]") {
  const std::string plan = wide_deep_plan(R"({"type": "adam", "learning_rate": 0.05})");
  const auto model = initialize_model(plan, 3);
  const Dataset data = wide_deep_data(8, 19);
  const auto full = execute(plan, model.data(), model.size(), data);
  std::vector<std::uint32_t> tokens = union_rows(data, 0, 1);
  tokens.push_back(499);  // padding the data do not touch
  tokens = fedleaf::test::sorted_unique(tokens);
  const auto selected = select_tables(
      model, {{"tokens/weight", tokens}, {"wide/weight", data.distinct_ids(2).rows()}});
  CHECK(execute(plan, selected.data(), selected.size(), data) == full);
  // A selection lacking a row one of the table's inputs touches (a subject-only id) is refused.
  std::vector<std::uint32_t> body_only = data.distinct_ids(0).rows();
  const auto short_selection = select_tables(model, {{"tokens/weight", body_only}});
  CHECK_THROWS_AS(execute(plan, short_selection.data(), short_selection.size(), data),
                  fedleaf::InvalidInput);
}

TEST_CASE("graph_training_result_bytes_are_pinned_across_platforms", "[multi_input]") {
  // The same constant natively and under wasm (baseline and SIMD kernels agree bit for bit).
  const std::string plan = wide_deep_plan(R"({"type": "adam", "learning_rate": 0.05})");
  const auto model = initialize_model(plan, 1);
  const Dataset data = wide_deep_data(2, 21);
  const auto result = execute(plan, model.data(), model.size(), data, {"task-29"});
  CHECK(murmur3_32(result.data(), result.size(), 0) == 2903234024u);
}

TEST_CASE("graphs_evaluate_and_predict_with_dropout_as_the_identity", "[multi_input]") {
  std::string plan = wide_deep_plan(R"({"type": "sgd", "learning_rate": 0.1})");
  const auto model = initialize_model(plan, 4);
  const Dataset data = wide_deep_data(3, 12);
  const Predictions p = predict(plan, model.data(), model.size(), data);
  CHECK(p.num_classes == 2);
  REQUIRE(p.probabilities.size() == 24);
  // Inference is deterministic and mask-free: a subset predicts the same rows.
  const Predictions first = predict(plan, model.data(), model.size(), data.subset({0, 1, 2}));
  for (std::size_t i = 0; i < 6; ++i) CHECK(first.probabilities[i] == p.probabilities[i]);
  plan.replace(plan.find(R"({"model")"), 8, R"({"kind": "evaluate", "model")");
  const SafetensorsFile eval = read_safetensors(execute(plan, model.data(), model.size(), data));
  CHECK(eval.metadata.at("kind") == "evaluate");
  CHECK(eval.metadata.count("auc") == 1);
}

TEST_CASE("mean_squared_error_trains_on_float_targets", "[multi_input]") {
  // ids → embedding → dense regression of a planted linear function of the ids.
  const std::string plan = R"({"model": {"inputs": {"ids": "sparse_ids",
        "x": {"type": "dense", "dim": 1}},
      "layers": [{"type": "embedding_bag", "name": "e", "input": "ids", "vocab": 20, "dim": 2,
                  "combiner": "sum"},
                 {"type": "concatenate", "name": "j", "inputs": ["e", "x"]},
                 {"type": "dense", "name": "out", "units": 1}],
      "loss": "mean_squared_error"},
    "train": {"optimizer": {"type": "adam", "learning_rate": 0.05}, "epochs": 60,
              "batch_size": 8},
    "updates": {"e/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
                "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
                "out/bias": {"encoding": "dense", "aggregator": "weighted_mean"}}})";
  SeededRandom rng(12);
  const std::size_t n = 64;
  std::vector<InputColumns> inputs;
  inputs.push_back(random_sparse_input("ids", rng, n, 20, 2, false));
  inputs.push_back(random_dense_input("x", rng, n, 1));
  std::vector<float> targets(n);
  for (std::size_t i = 0; i < n; ++i) {
    float t = 0.5f * inputs[1].dense[i];
    for (std::uint32_t j = inputs[0].offsets[i]; j < inputs[0].offsets[i + 1]; ++j) {
      t += 0.1f * static_cast<float>(inputs[0].ids[j] % 5);
    }
    targets[i] = t;
  }
  const Dataset data = Dataset::from_inputs(std::move(inputs), Dataset::Targets{targets, 1});
  const auto model = initialize_model(plan, 1);
  TrainingSession session(plan, model.data(), model.size(), data);
  session.step();
  const double first = session.mean_loss();
  while (session.step()) {
  }
  const SafetensorsFile result = read_safetensors(session.result());
  CHECK(std::stod(result.metadata.at("loss")) < first);
  CHECK(result.metadata.at("accuracy") == "0");
  // predict gives the regression's outputs: the evaluated loss is their squared error.
  const Predictions p = predict(plan, model.data(), model.size(), data);
  CHECK(p.num_classes == 1);
  REQUIRE(p.probabilities.size() == n);
  double squared = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    squared += (p.probabilities[i] - targets[i]) * (p.probabilities[i] - targets[i]);
  }
  std::string eval_plan = plan;
  eval_plan.replace(eval_plan.find(R"({"model")"), 8, R"({"kind": "evaluate", "model")");
  const SafetensorsFile eval =
      read_safetensors(execute(eval_plan, model.data(), model.size(), data));
  CHECK(std::stod(eval.metadata.at("loss")) == Approx(squared / n).epsilon(1e-5));
  CHECK(eval.metadata.count("auc") == 0);

  // Class labels for a regression, targets for a classifier: refused, naming the rule.
  CHECK_THROWS_MATCHES(
      execute(plan, model.data(), model.size(),
              Dataset::from_inputs({sparse("ids", {0, 1}, {1}), dense("x", 1, {0})}, {1})),
      fedleaf::InvalidInput,
      MessageContains("mean_squared_error needs 1 float target(s) per example, the dataset has "
                      "class labels"));
}

TEST_CASE("table_distinct_ids_are_the_union_over_the_tables_inputs", "[multi_input]") {
  const Plan plan = parse_plan(wide_deep_plan(R"({"type": "sgd", "learning_rate": 0.1})"));
  const Dataset data = wide_deep_data(7, 9);
  CHECK(table_distinct_ids(plan, data, "tokens/weight") == union_rows(data, 0, 1));
  CHECK(table_distinct_ids(plan, data, "wide/weight") == data.distinct_ids(2).rows());
  const std::vector<std::size_t> from = dataset_inputs_for(plan.model, data);
  CHECK(table_inputs(plan.tables[0], from) == std::vector<std::size_t>{0, 1});
  CHECK_THROWS_MATCHES(table_distinct_ids(plan, data, "subject_emb/weight"), fedleaf::InvalidInput,
                       MessageContains("'subject_emb/weight' is no embedding table of the model "
                                       "(tables: tokens/weight, wide/weight)"));
  // A one-input dataset feeds a one-input plan's table.
  const Plan one = parse_plan(R"({"kind": "evaluate", "model": {"inputs": {"t": "sparse_ids"},
      "layers": [{"type": "embedding_bag", "name": "e", "vocab": 30, "dim": 1}],
      "loss": "sigmoid_cross_entropy"}})");
  const Dataset csr = fedleaf::test::random_sparse_dataset(1, 5, 30, 3, false, 2);
  CHECK(table_distinct_ids(one, csr, "e/weight") == csr.distinct_ids().rows());
}
