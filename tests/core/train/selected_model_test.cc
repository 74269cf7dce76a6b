// Training on the rows model:select answers (a row-sparse embedding table) against training on the
// whole table: the same update bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/data/seeded_random.h"
#include "core/train/executor.h"
#include "core/train/training_session.h"
#include "core/wire/safetensors.h"
#include "core/wire/safetensors_index.h"
#include "tests/core/error_matchers.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

std::string plan_with(const std::string& optimizer) {
  return R"({"model": {"inputs": {"t": "sparse_ids"}, "layers": [
      {"type": "embedding_bag", "name": "emb", "vocab": 5000, "dim": 8, "combiner": "sqrtn"},
      {"type": "dense", "name": "out", "units": 2}], "loss": "softmax_cross_entropy"},
    "train": {"optimizer": )" +
         optimizer + R"(, "epochs": 2, "batch_size": 8},
    "updates": {"emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
                "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
                "out/bias": {"encoding": "dense", "aggregator": "weighted_mean"}}})";
}

// What model:select answers: `rows` (sorted, unique) of emb/weight as a row-sparse tensor, the
// other tensors whole.
std::vector<std::uint8_t> select_rows(const std::vector<std::uint8_t>& model,
                                      const std::vector<std::uint32_t>& rows) {
  SafetensorsFile file = read_safetensors(model);
  const DenseTensor& table = std::get<DenseTensor>(file.tensors.at("emb/weight"));
  const std::size_t dim = table.shape()[1];
  RowIndices indices = RowIndices::from_shape({rows.size()});
  DenseTensor values = DenseTensor::zeros(DType::F32, {rows.size(), dim});
  for (std::size_t r = 0; r < rows.size(); ++r) {
    indices(r) = rows[r];
    std::copy(table.data<float>() + rows[r] * dim, table.data<float>() + (rows[r] + 1) * dim,
              values.data<float>() + r * dim);
  }
  DenseShape dense_shape{static_cast<std::int64_t>(table.shape()[0]),
                         static_cast<std::int64_t>(dim)};
  file.tensors.erase("emb/weight");
  file.tensors.emplace("emb/weight", RowSparseTensor(std::move(indices), std::move(values),
                                                     std::move(dense_shape), "emb/weight"));
  return write_safetensors(file.tensors, {{"model_etag", "\"e1\""}, {"round", "3"}});
}

// The distinct ids of `data` plus `extra` random unused ids (select_padding), sorted.
std::vector<std::uint32_t> padded_rows(const Dataset& data, std::size_t extra, std::uint64_t seed) {
  std::vector<std::uint32_t> rows = data.distinct_ids().rows();
  SeededRandom rng(seed);
  while (extra > 0) {
    const auto id = static_cast<std::uint32_t>(rng.below(5000));
    if (std::binary_search(rows.begin(), rows.end(), id)) continue;
    rows.insert(std::lower_bound(rows.begin(), rows.end(), id), id);
    --extra;
  }
  return rows;
}

}  // namespace

TEST_CASE("training_on_selected_rows_gives_the_update_bytes_of_the_full_table", "[select]") {
  for (const char* optimizer :
       {R"({"type": "sgd", "learning_rate": 0.5})", R"({"type": "adam", "learning_rate": 0.05})",
        R"({"type": "momentum", "learning_rate": 0.1, "momentum": 0.9})"}) {
    INFO(optimizer);
    const std::string plan = plan_with(optimizer);
    const auto model = initialize_model(plan, 7);
    const Dataset data = fedleaf::test::random_sparse_dataset(11, 40, 5000, 12, false, 2);
    const auto full = execute(plan, model.data(), model.size(), data, {"task-1"});
    for (std::size_t padding : {0, 1, 37}) {
      INFO("padding " << padding);
      const auto selected = select_rows(model, padded_rows(data, padding, padding + 1));
      CHECK(execute(plan, selected.data(), selected.size(), data, {"task-1"}) == full);
    }
  }
}

TEST_CASE("training_rejects_a_selection_without_a_row_the_data_touch", "[select]") {
  const std::string plan = plan_with(R"({"type": "sgd", "learning_rate": 0.5})");
  const auto model = initialize_model(plan, 7);
  const Dataset data = fedleaf::test::random_sparse_dataset(11, 40, 5000, 12, false, 2);
  std::vector<std::uint32_t> rows = data.distinct_ids().rows();
  const std::uint32_t missing = rows[rows.size() / 2];
  rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(rows.size() / 2));
  const auto selected = select_rows(model, rows);
  CHECK_THROWS_MATCHES(
      execute(plan, selected.data(), selected.size(), data), fedleaf::InvalidInput,
      MessageContains("model tensor 'emb/weight': the data touch row " + std::to_string(missing) +
                      ", which the selected rows do not hold"));
}

TEST_CASE("training_rejects_a_selection_whose_rows_are_not_sorted", "[select]") {
  const std::string plan = plan_with(R"({"type": "sgd", "learning_rate": 0.5})");
  const auto model = initialize_model(plan, 7);
  const Dataset data = fedleaf::test::random_sparse_dataset(11, 40, 5000, 12, false, 2);
  std::vector<std::uint32_t> rows = data.distinct_ids().rows();
  std::swap(rows[0], rows[1]);
  const auto selected = select_rows(model, rows);
  CHECK_THROWS_MATCHES(execute(plan, selected.data(), selected.size(), data), fedleaf::InvalidInput,
                       MessageContains("model tensor 'emb/weight': selected rows are not sorted"));
}

TEST_CASE("training_rejects_a_selection_of_another_shape", "[select]") {
  const std::string plan = plan_with(R"({"type": "sgd", "learning_rate": 0.5})");
  const Dataset data = fedleaf::test::random_sparse_dataset(11, 40, 4000, 12, false, 2);
  std::string other = plan;
  other.replace(other.find("5000"), 4, "4000");
  const auto model = initialize_model(other, 7);
  const auto selected = select_rows(model, data.distinct_ids().rows());
  CHECK_THROWS_MATCHES(execute(plan, selected.data(), selected.size(), data), fedleaf::InvalidInput,
                       MessageContains("model tensor 'emb/weight': dense_shape [4000, 8] differs "
                                       "from [5000, 8]"));
}

namespace {

// Every byte range the session reads from `model` while it is built, checked inside its data
// section (result() reads the same ranges again for the update: its initial values).
struct ReadLog {
  std::vector<std::pair<std::uint64_t, std::size_t>> reads;
  std::size_t bytes() const {
    std::size_t n = 0;
    for (const auto& r : reads) n += r.second;
    return n;
  }
};

std::vector<std::uint8_t> train_logging_reads(const std::string& plan,
                                              const std::vector<std::uint8_t>& model,
                                              const Dataset& data, ReadLog& log) {
  std::uint64_t header = 0;
  std::memcpy(&header, model.data(), 8);
  const SafetensorsIndex index =
      index_safetensors(model.data(), static_cast<std::size_t>(8 + header), model.size());
  bool built = false;
  const ModelByteReader read = [&](std::uint64_t begin, std::size_t size, std::uint8_t* out) {
    REQUIRE(begin >= 8 + header);
    REQUIRE(begin + size <= model.size());
    if (!built) log.reads.emplace_back(begin, size);
    std::memcpy(out, model.data() + begin, size);
  };
  TrainingSession session(std::make_shared<const Plan>(parse_plan(plan)), index, read, data);
  built = true;
  while (session.step()) {
  }
  return session.result("task-1");
}

}  // namespace

TEST_CASE("a_session_reads_rows_far_apart_one_by_one_and_copies_nothing_else", "[select]") {
  const std::string plan = plan_with(R"({"type": "sgd", "learning_rate": 0.5})");
  const auto model = initialize_model(plan, 7);
  // Rows 0, 1 (consecutive: one read) and 4999, more than kModelRowBlockBytes after them.
  REQUIRE(4998 * 8 * 4 > kModelRowBlockBytes);
  const Dataset data = Dataset::from_csr({0, 2, 3}, {0, 4999, 1}, {}, {0, 1}, 5000);
  ReadLog log;

  const auto update = train_logging_reads(plan, model, data, log);

  CHECK(log.reads.size() == 2 + 2);               // two row reads, out/weight, out/bias
  CHECK(log.bytes() == (3 * 8 + 8 * 2 + 2) * 4);  // touched rows, out/weight, out/bias
  CHECK(update == execute(plan, model.data(), model.size(), data, {"task-1"}));
}

TEST_CASE("a_session_reads_rows_close_together_in_blocks_of_at_most_the_block_size", "[select]") {
  const std::string plan = plan_with(R"({"type": "sgd", "learning_rate": 0.5})");
  const auto model = initialize_model(plan, 7);
  const Dataset data = fedleaf::test::random_sparse_dataset(11, 40, 5000, 12, false, 2);
  ReadLog log;

  const auto update = train_logging_reads(plan, model, data, log);

  const std::size_t table_bytes = 5000 * 8 * 4;
  const std::size_t dense_bytes = (8 * 2 + 2) * 4;
  CHECK(log.reads.size() <= table_bytes / kModelRowBlockBytes + 1 + 2);
  CHECK(log.bytes() <= table_bytes + dense_bytes);
  for (std::size_t k = 0; k + 2 < log.reads.size(); ++k) {
    CHECK(log.reads[k].second <= kModelRowBlockBytes);
  }
  CHECK(update == execute(plan, model.data(), model.size(), data, {"task-1"}));
}

TEST_CASE("training_rejects_a_non_finite_value_it_trains_or_a_selected_row_outside_the_table",
          "[select]") {
  const std::string plan = plan_with(R"({"type": "sgd", "learning_rate": 0.5})");
  const auto model = initialize_model(plan, 7);
  const Dataset data = fedleaf::test::random_sparse_dataset(11, 40, 5000, 12, false, 2);
  const std::vector<std::uint32_t> rows = data.distinct_ids().rows();
  SafetensorsFile file = read_safetensors(select_rows(model, rows));
  auto& selection = std::get<RowSparseTensor>(file.tensors.at("emb/weight"));
  selection.values().data<float>()[3] = std::nanf("");
  const auto nan_bytes = write_safetensors(file.tensors);
  CHECK_THROWS_MATCHES(
      execute(plan, nan_bytes.data(), nan_bytes.size(), data), fedleaf::InvalidInput,
      MessageContains("model tensor 'emb/weight': a value is not finite (NaN or infinity)"));

  // A valid selection whose stored row id is then patched past the table.
  auto past_bytes = select_rows(model, {4999});
  const SafetensorsArray& ids =
      index_safetensors(past_bytes.data(), past_bytes.size()).arrays.at("emb/weight:indices");
  const std::int64_t past = 5000;
  std::memcpy(past_bytes.data() + ids.begin, &past, sizeof past);
  CHECK_THROWS_MATCHES(execute(plan, past_bytes.data(), past_bytes.size(), data),
                       fedleaf::InvalidInput,
                       MessageContains("model tensor 'emb/weight': selected row 5000 is outside "
                                       "[0, 5000)"));

  // The whole table: every row the data touch is checked, whatever the value's place.
  const SafetensorsArray table =
      index_safetensors(model.data(), model.size()).arrays.at("emb/weight");
  const auto with_value = [&](std::uint32_t row, std::size_t column, float value) {
    std::vector<std::uint8_t> bytes = model;
    std::memcpy(bytes.data() + table.begin + (std::size_t{row} * 8 + column) * 4, &value, 4);
    return bytes;
  };
  // Each non-finite kind, in the first, a middle and the last trained row, at several columns
  // (the check runs over whole vector lanes and a remainder).
  for (const float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    for (const std::uint32_t row : {rows.front(), rows[rows.size() / 2], rows.back()}) {
      for (const std::size_t column : {std::size_t{0}, std::size_t{5}, std::size_t{7}}) {
        const auto bytes = with_value(row, column, bad);
        CHECK_THROWS_MATCHES(
            execute(plan, bytes.data(), bytes.size(), data), fedleaf::InvalidInput,
            MessageContains("model tensor 'emb/weight': a value is not finite (NaN or infinity)"));
      }
    }
  }
  // Rows the data do not touch are never read, so they are not checked either.
  std::uint32_t untouched = 0;
  while (std::binary_search(rows.begin(), rows.end(), untouched)) ++untouched;
  const auto untouched_nan = with_value(untouched, 3, std::nanf(""));
  CHECK_NOTHROW(execute(plan, untouched_nan.data(), untouched_nan.size(), data));
  // The largest finite magnitude and a subnormal are finite: the session sets up (training from
  // FLT_MAX then diverges, which the result reports).
  for (const float extreme : {3.4028235e38f, -3.4028235e38f, 1e-45f}) {
    const auto bytes = with_value(rows[1], 2, extreme);
    CHECK_NOTHROW(TrainingSession(plan, bytes.data(), bytes.size(), data));
  }
}
