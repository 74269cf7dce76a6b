// A leaf's compressed upload (the plan's "compression") is the plain upload's tensors written by
// write_safetensors with that compression: one format, whoever writes it. The round aggregator
// decodes it before folding, and a broken one is refused whole.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/aggregation/round/round_aggregator.h"
#include "core/aggregation/updates/update_plan.h"
#include "core/data/dataset.h"
#include "core/data/seeded_random.h"
#include "core/train/executor.h"
#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

// The demo plan of tests/core/train/demo_round_pin_test.cc, with `compression` added to each
// tensor's updates entry.
const std::string kDemoPlan = R"({
  "model": {
    "inputs": {"tokens": "sparse_ids"},
    "layers": [
      {"type": "embedding_bag", "name": "emb", "input": "tokens", "vocab": 262144, "dim": 16,
       "combiner": "sqrtn"},
      {"type": "dense", "name": "out", "units": 2}
    ],
    "loss": "softmax_cross_entropy"
  },
  "features": {"hash": "murmur3_32", "num_buckets": 262144, "ngrams": 1, "binary": true},
  "train": {"optimizer": {"type": "adam", "learning_rate": 0.03}, "epochs": 1, "batch_size": 32},
  "updates": {
    "emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors",
                   "download": "select"},
    "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
    "out/bias": {"encoding": "dense", "aggregator": "weighted_mean"}
  }
})";

std::string with_compression(const std::string& emb, const std::string& dense) {
  std::string plan = kDemoPlan;
  const auto insert = [&](const std::string& after, const std::string& field) {
    const std::size_t at = plan.find(after);
    REQUIRE(at != std::string::npos);
    plan.insert(at + after.size(), ", " + field);
  };
  insert("\"aggregator\": \"mean_over_contributors\"", emb);
  insert("\"out/weight\": {\"encoding\": \"dense\", \"aggregator\": \"weighted_mean\"", dense);
  insert("\"out/bias\": {\"encoding\": \"dense\", \"aggregator\": \"weighted_mean\"", dense);
  return plan;
}

// A leaf's data: `n` emails of 1..24 distinct-ish word ids, drawn from the first 600 buckets so
// that the two leaves share rows (mean_over_contributors publishes rows sent by >= 2 reports).
Dataset leaf_data(std::uint64_t seed, std::size_t n) {
  SeededRandom rng(seed);
  std::vector<std::uint32_t> offsets{0};
  std::vector<std::uint32_t> ids;
  std::vector<std::int32_t> labels;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t count = 1 + rng.below(24);
    for (std::uint64_t k = 0; k < count; ++k)
      ids.push_back(static_cast<std::uint32_t>(rng.below(600)));
    offsets.push_back(static_cast<std::uint32_t>(ids.size()));
    labels.push_back(static_cast<std::int32_t>(rng.below(2)));
  }
  return Dataset::from_csr(offsets, ids, {}, labels, 262144);
}

std::uint64_t fnv1a64(const std::vector<std::uint8_t>& bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (const std::uint8_t b : bytes) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h;
}

struct Setting {
  std::string emb;
  std::string dense;
  TensorCompression emb_compression;
  TensorCompression dense_compression;
};

const Setting kInt8 = {R"("compression": {"values": "int8", "ids": "delta_varint"})",
                       R"("compression": {"values": "int8"})",
                       {ValuesCompression::kInt8, IdsCompression::kDeltaVarint},
                       {ValuesCompression::kInt8, IdsCompression::kI64}};
const Setting kF16 = {R"("compression": {"values": "f16"})",
                      R"("compression": {"values": "f16"})",
                      {ValuesCompression::kF16, IdsCompression::kI64},
                      {ValuesCompression::kF16, IdsCompression::kI64}};
const Setting kU32 = {R"("compression": {"ids": "u32"})",
                      R"("compression": {"values": "f32"})",
                      {ValuesCompression::kF32, IdsCompression::kU32},
                      {}};

std::vector<std::uint8_t> upload(const std::string& plan, const std::vector<std::uint8_t>& model,
                                 const Dataset& data) {
  ExecuteOptions options;
  options.task_id = "1";
  return execute(plan, model.data(), model.size(), data, options);
}

}  // namespace

TEST_CASE("a_compressed_upload_is_the_plain_update_written_with_that_compression",
          "[compression]") {
  const std::vector<std::uint8_t> model = initialize_model(kDemoPlan, /*seed=*/7);
  const Dataset data = leaf_data(11, 70);
  const SafetensorsFile plain = read_safetensors(upload(kDemoPlan, model, data));
  for (const Setting& s : {kInt8, kF16, kU32}) {
    INFO(s.emb);
    const std::vector<std::uint8_t> compressed =
        upload(with_compression(s.emb, s.dense), model, data);
    CHECK(compressed == write_safetensors(plain.tensors, plain.metadata,
                                          {{"emb/weight", s.emb_compression},
                                           {"out/weight", s.dense_compression},
                                           {"out/bias", s.dense_compression}}));
  }
}

TEST_CASE("int8_rows_and_delta_varint_ids_shrink_the_demo_upload_more_than_3x", "[compression]") {
  const std::vector<std::uint8_t> model = initialize_model(kDemoPlan, /*seed=*/7);
  const Dataset data = leaf_data(11, 70);
  const std::vector<std::uint8_t> plain = upload(kDemoPlan, model, data);
  const std::vector<std::uint8_t> int8 =
      upload(with_compression(kInt8.emb, kInt8.dense), model, data);
  const std::vector<std::uint8_t> f16 = upload(with_compression(kF16.emb, kF16.dense), model, data);
  CHECK(static_cast<double>(plain.size()) / static_cast<double>(int8.size()) > 3.0);
  // F16 halves the values; the I64 ids stay.
  CHECK(static_cast<double>(plain.size()) / static_cast<double>(f16.size()) > 1.7);
  // Pinned, so that native, wasm SIMD and wasm baseline write the same compressed bytes.
  CHECK(fnv1a64(int8) == 0xc2e5ef503aec91e0ull);
  CHECK(fnv1a64(f16) == 0x698c54e6be82eb6full);
}

TEST_CASE("the_round_aggregator_folds_a_compressed_upload_as_its_decoded_values", "[compression]") {
  const std::vector<std::uint8_t> model = initialize_model(kDemoPlan, /*seed=*/7);
  const std::string plan = with_compression(kInt8.emb, kInt8.dense);
  const std::vector<std::uint8_t> first = upload(plan, model, leaf_data(11, 70));
  const std::vector<std::uint8_t> second = upload(plan, model, leaf_data(12, 45));
  const UpdatePlan updates = parse_update_plan(plan);
  RoundAggregator compressed(updates, read_safetensors(model).tensors, 2);
  RoundAggregator decoded(updates, read_safetensors(model).tensors, 2);
  for (const auto* bytes : {&first, &second}) {
    compressed.add_result(bytes->data(), bytes->size());
    const SafetensorsFile file = read_safetensors(*bytes);
    const std::vector<std::uint8_t> plain = write_safetensors(file.tensors, file.metadata);
    decoded.add_result(plain.data(), plain.size());
  }
  CHECK(write_safetensors(compressed.next_model()) == write_safetensors(decoded.next_model()));
  CHECK(compressed.total_weight() == decoded.total_weight());
}

TEST_CASE("a_compressed_upload_with_a_broken_scale_or_id_is_refused_and_nothing_folded",
          "[compression]") {
  const std::vector<std::uint8_t> model = initialize_model(kDemoPlan, /*seed=*/7);
  const std::string plan = with_compression(kInt8.emb, kInt8.dense);
  const std::vector<std::uint8_t> good = upload(plan, model, leaf_data(11, 70));
  const SafetensorsIndex index = index_safetensors(good.data(), good.size());
  RoundAggregator round(parse_update_plan(plan), read_safetensors(model).tensors, 2);

  std::vector<std::uint8_t> bad_scale = good;
  const std::uint64_t scale = index.arrays.at("emb/weight:scales").begin + 4;
  const float nan = NAN;
  std::memcpy(bad_scale.data() + scale, &nan, 4);
  CHECK_THROWS_MATCHES(round.add_result(bad_scale.data(), bad_scale.size()), fedleaf::InvalidInput,
                       MessageContains("tensor 'emb/weight': int8 scale 1 is nan"));

  std::vector<std::uint8_t> duplicate = good;
  auto second = static_cast<std::size_t>(index.arrays.at("emb/weight:indices").begin);
  while (good[second] & 0x80) ++second;
  duplicate[second + 1] = 0;  // the second id's gap becomes 0
  CHECK_THROWS_MATCHES(round.add_result(duplicate.data(), duplicate.size()), fedleaf::InvalidInput,
                       MessageContains("(gap 0: ids must be strictly increasing)"));
  CHECK(round.num_reports() == 0);
  round.add_result(good.data(), good.size());
  CHECK(round.num_reports() == 1);
}
