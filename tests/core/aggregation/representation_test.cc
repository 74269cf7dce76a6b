// Sparse and dense representations: when the accumulator switches, what it costs, and that the
// result never depends on it.
#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <stdexcept>
#include <type_traits>

#include "tests/core/aggregation/aggregation_test_util.h"

namespace fedleaf {
namespace {

// `clients` updates of `k` distinct random keys each, canonical, over a flat [d] tensor.
std::vector<core::SparseTensor> random_clients(std::mt19937_64& rng, std::int64_t d,
                                               std::size_t clients, std::size_t k) {
  std::vector<core::SparseTensor> out;
  for (std::size_t c = 0; c < clients; ++c) {
    std::vector<std::int64_t> keys;
    for (std::size_t e = 0; e < k; ++e) {
      keys.push_back(std::uniform_int_distribution<std::int64_t>(0, d - 1)(rng));
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    core::CooIndices idx = core::CooIndices::from_shape({keys.size(), 1});
    xt::xarray<float> v = xt::xarray<float>::from_shape({keys.size()});
    for (std::size_t e = 0; e < keys.size(); ++e) {
      idx(e, 0) = keys[e];
      v(e) = static_cast<float>(e % 7) - 3.f;
    }
    out.emplace_back(std::move(idx), core::DenseTensor(std::move(v)), core::DenseShape{d});
  }
  return out;
}

// Like random_clients, but every update has exactly k distinct keys.
std::vector<core::SparseTensor> random_distinct_clients(std::mt19937_64& rng, std::int64_t d,
                                                        std::size_t clients, std::size_t k) {
  std::vector<core::SparseTensor> out;
  for (std::size_t c = 0; c < clients; ++c) {
    std::set<std::int64_t> keys;
    while (keys.size() < k) keys.insert(std::uniform_int_distribution<std::int64_t>(0, d - 1)(rng));
    core::CooIndices idx = core::CooIndices::from_shape({k, 1});
    xt::xarray<float> v = xt::xarray<float>::from_shape({k});
    std::size_t e = 0;
    for (std::int64_t key : keys) {
      idx(e, 0) = key;
      v(e) = static_cast<float>(e % 7) - 3.f;
      ++e;
    }
    out.emplace_back(std::move(idx), core::DenseTensor(std::move(v)), core::DenseShape{d});
  }
  return out;
}

TEST_CASE("auto_accumulator_stays_sparse_with_memory_proportional_to_touched_keys") {
  std::mt19937_64 rng(11);
  const std::int64_t d = std::int64_t{1} << 30;  // a dense f64 array would need 8 GiB
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kWeightedMean}, UpdateEncoding::kCoo,
                                 DType::F32, {d});
  for (const auto& u : random_clients(rng, d, 20, 500)) acc.add(u, 1.0);
  CHECK(acc.representation() == Representation::kSparse);
  const std::uint64_t touched = acc.num_touched();
  CHECK(touched > 9000);
  // Table ≤ 4 entries per key at 16 bytes, slots ≤ 2 per key at 16 bytes.
  CHECK(acc.state_bytes() <= touched * 96);
  CHECK(acc.peak_state_bytes() <= touched * 160);
}

TEST_CASE("auto_accumulator_switches_to_dense_once_sparse_would_be_no_smaller") {
  std::mt19937_64 rng(12);
  const std::int64_t d = 20000;
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kWeightedMean}, UpdateEncoding::kCoo,
                                 DType::F32, {d});
  const auto clients = random_clients(rng, d, 40, 500);
  const std::size_t dense_bytes = static_cast<std::size_t>(d) * 8 + (d + 63) / 64 * 8;
  bool switched = false;
  for (const auto& u : clients) {
    acc.add(u, 1.0);
    if (acc.representation() == Representation::kSparse) {
      CHECK(acc.state_bytes() < dense_bytes);
    } else if (!switched) {
      switched = true;
      const double fraction = static_cast<double>(acc.num_touched()) / static_cast<double>(d);
      // Documented switch point for coo weighted_mean: between about 1/8 and 1/4 touched.
      CHECK(fraction > 0.06);
      CHECK(fraction < 0.3);
    }
  }
  CHECK(switched);
  CHECK(acc.state_bytes() == dense_bytes);
}

TEST_CASE("expected_entries_hint_chooses_the_representation_up_front") {
  const core::OperatorSpec spec{SparseSumOperator::kWeightedMean, 0.0};
  // 5M expected entries into 10^7 keys touch ~40%: dense from the start.
  core::SparseSumAccumulator busy("h", spec, UpdateEncoding::kCoo, DType::F32, {10'000'000},
                                  {RepresentationPolicy::kAuto, 5'000'000});
  CHECK(busy.representation() == Representation::kDense);
  // 5k rows into 2^25 rows of 32: sparse, with the table sized for them.
  core::SparseSumAccumulator embedding("e", spec, UpdateEncoding::kRowSparse, DType::F32,
                                       {std::int64_t{1} << 25, 32},
                                       {RepresentationPolicy::kAuto, 5000});
  CHECK(embedding.representation() == Representation::kSparse);
  CHECK(embedding.state_bytes() >= 5000 * 32 * 8);
  CHECK(embedding.state_bytes() < 5000 * 32 * 8 * 2);
}

TEST_CASE("expected_updates_hint_plans_at_the_first_update_from_its_entry_count") {
  std::mt19937_64 rng(14);
  const std::int64_t d = 100'000;
  const auto clients = random_clients(rng, d, 30, 2000);
  const core::OperatorSpec spec{SparseSumOperator::kWeightedMean, 0.0};
  // 30 updates × 2000 entries touch ~45% of 10^5 keys: dense from the first update on.
  core::SparseSumAccumulator busy("h", spec, UpdateEncoding::kCoo, DType::F32, {d},
                                  {RepresentationPolicy::kAuto, 0, 30});
  CHECK(busy.representation() == Representation::kSparse);  // nothing known before an update
  busy.add(clients[0], 1.0);
  CHECK(busy.representation() == Representation::kDense);
  // 2 updates × 2000 entries touch ~4%: sparse, with the table reserved for all of them. The
  // plan assumes every update has the first one's entry count, so both have exactly 2000 keys
  // (random_clients drops duplicate draws, which would make the counts differ by platform).
  const auto even = random_distinct_clients(rng, d, 2, 2000);
  core::SparseSumAccumulator quiet("h", spec, UpdateEncoding::kCoo, DType::F32, {d},
                                   {RepresentationPolicy::kAuto, 0, 2});
  quiet.add(even[0], 1.0);
  CHECK(quiet.representation() == Representation::kSparse);
  const std::size_t reserved = quiet.state_bytes();
  quiet.add(even[1], 2.0);
  CHECK(quiet.state_bytes() == reserved);
  CHECK(quiet.peak_state_bytes() == reserved);
  // The hint never changes the result.
  core::SparseSumAccumulator plain("h", spec, UpdateEncoding::kCoo, DType::F32, {d});
  for (std::size_t c = 1; c < clients.size(); ++c) busy.add(clients[c], static_cast<double>(c));
  plain.add(clients[0], 1.0);
  for (std::size_t c = 1; c < clients.size(); ++c) plain.add(clients[c], static_cast<double>(c));
  CHECK(busy.finalize() == plain.finalize());
  CHECK(busy.to_safetensors() == plain.to_safetensors());
}

TEST_CASE("rejected_first_update_leaves_a_hinted_accumulator_unplanned") {
  const core::OperatorSpec spec{SparseSumOperator::kWeightedMean, 0.0};
  core::SparseSumAccumulator acc("h", spec, UpdateEncoding::kCoo, DType::F32, {1000},
                                 {RepresentationPolicy::kAuto, 0, 1000});
  const std::size_t before = acc.state_bytes();
  core::CooIndices idx = core::CooIndices::from_shape({2, 1});
  idx(0, 0) = 3;
  idx(1, 0) = 7;
  const core::SparseTensor bad(idx, core::DenseTensor(xt::xarray<float>{1.f, NAN}), {1000});
  CHECK_THROWS_AS(acc.add(bad, 1.0), InvalidInput);
  CHECK(acc.representation() == Representation::kSparse);
  CHECK(acc.state_bytes() == before);
  CHECK(acc.num_updates() == 0);
}

TEST_CASE("many_touched_keys_finalize_and_save_alike_in_both_representations") {
  // Enough keys that the sparse representation sorts them with its radix sort, over a rank-2
  // coo shape and a row_sparse shape.
  std::mt19937_64 rng(15);
  struct Case {
    UpdateEncoding encoding;
    core::DenseShape shape;
  };
  for (const Case& c :
       {Case{UpdateEncoding::kCoo, {300, 700}}, Case{UpdateEncoding::kRowSparse, {40'000, 3}}}) {
    std::vector<core::Tensor> updates;
    for (int u = 0; u < 6; ++u) {
      updates.push_back(test::random_update<float>(rng, c.encoding, c.shape));
    }
    for (const core::OperatorSpec& spec : test::all_operator_specs()) {
      core::SparseSumAccumulator sparse("h", spec, c.encoding, DType::F32, c.shape,
                                        {RepresentationPolicy::kSparse, 0});
      core::SparseSumAccumulator dense("h", spec, c.encoding, DType::F32, c.shape,
                                       {RepresentationPolicy::kDense, 0});
      for (std::size_t u = 0; u < updates.size(); ++u) {
        sparse.add(updates[u], static_cast<double>(u + 1));
        dense.add(updates[u], static_cast<double>(u + 1));
      }
      INFO("operator " << core::operator_name(spec.op) << ", encoding "
                       << core::update_encoding_name(c.encoding));
      REQUIRE(sparse.num_touched() > 5000);
      CHECK(sparse.finalize() == dense.finalize());
      CHECK(sparse.to_safetensors() == dense.to_safetensors());
    }
  }
}

TEST_CASE("result_is_bitwise_identical_whichever_representation_was_used") {
  std::mt19937_64 rng(13);
  const auto clients = random_clients(rng, 3000, 30, 200);
  for (const core::OperatorSpec& spec : test::all_operator_specs()) {
    std::vector<core::Tensor> results;
    for (auto policy : {RepresentationPolicy::kAuto, RepresentationPolicy::kSparse,
                        RepresentationPolicy::kDense}) {
      core::SparseSumAccumulator acc("h", spec, UpdateEncoding::kCoo, DType::F32, {3000},
                                     {policy, 0});
      for (std::size_t c = 0; c < clients.size(); ++c) {
        acc.add(clients[c], static_cast<double>(c % 5 + 1));
      }
      results.push_back(acc.finalize());
    }
    INFO("operator " << core::operator_name(spec.op));
    CHECK(results[0] == results[1]);
    CHECK(results[0] == results[2]);
  }
}

// for_each_finalized_row visits finalize()'s rows, in order, with its values bit for bit, in
// either representation and dtype; anything but a row_sparse accumulator of values is refused.
template <class T>
void check_finalized_rows(const core::OperatorSpec& spec, RepresentationPolicy policy) {
  std::mt19937_64 rng(23);
  const DType dtype = std::is_same_v<T, float> ? DType::F32 : DType::F64;
  core::SparseSumAccumulator acc("emb", spec, UpdateEncoding::kRowSparse, dtype, {40, 3},
                                 {policy, 0});
  for (int c = 0; c < 9; ++c) {
    acc.add(test::random_update<T>(rng, UpdateEncoding::kRowSparse, {40, 3}), 1.0 + c % 4);
  }
  const auto finalized = std::get<core::RowSparseTensor>(acc.finalize());
  std::vector<std::int64_t> rows;
  std::vector<T> values;
  acc.for_each_finalized_row([&](std::uint64_t row, const void* v) {
    rows.push_back(static_cast<std::int64_t>(row));
    const T* t = static_cast<const T*>(v);
    values.insert(values.end(), t, t + 3);
  });
  REQUIRE(rows.size() == finalized.num_rows());
  for (std::size_t e = 0; e < rows.size(); ++e) CHECK(rows[e] == finalized.indices()(e));
  REQUIRE(values.size() == finalized.values().size());
  CHECK(std::memcmp(values.data(), finalized.values().data<T>(), values.size() * sizeof(T)) == 0);
}

TEST_CASE("for_each_finalized_row_visits_finalizes_rows_with_its_bits") {
  for (const core::OperatorSpec& spec : test::all_operator_specs()) {
    if (spec.op == SparseSumOperator::kCount) continue;
    INFO("operator " << core::operator_name(spec.op) << " min " << spec.min_contributors);
    for (auto policy : {RepresentationPolicy::kSparse, RepresentationPolicy::kDense}) {
      check_finalized_rows<float>(spec, policy);
      check_finalized_rows<double>(spec, policy);
    }
  }
  const auto refused = [](UpdateEncoding encoding, SparseSumOperator op) {
    const core::SparseSumAccumulator acc("t", {op}, encoding, DType::F32, {4, 2});
    CHECK_THROWS_AS(acc.for_each_finalized_row([](std::uint64_t, const void*) {}),
                    std::logic_error);
  };
  refused(UpdateEncoding::kDense, SparseSumOperator::kWeightedMean);
  refused(UpdateEncoding::kCoo, SparseSumOperator::kWeightedMean);
  refused(UpdateEncoding::kRowSparse, SparseSumOperator::kCount);
}

}  // namespace
}  // namespace fedleaf
