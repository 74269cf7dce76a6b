// The compressed encodings of update_compression.h: round trips within their bounds, the exact
// bytes (pinned, so native, wasm SIMD and wasm baseline write and read the same), and one case
// per decoding rule with its message.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/tensor/half_float.h"
#include "core/wire/safetensors.h"
#include "core/wire/update_compression.h"
#include "tests/core/error_matchers.h"
#include "tests/core/raw_safetensors.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;
using fedleaf::test::raw_safetensors;
using fedleaf::test::RawArray;

namespace {

// Deterministic on every platform (no <random> distributions, which differ between libraries).
struct Lcg {
  std::uint64_t state;
  std::uint32_t next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::uint32_t>(state >> 33);
  }
  // In [-1, 1), in steps of 2^-20.
  float unit() {
    return static_cast<float>(static_cast<std::int32_t>(next() >> 11) - (1 << 20)) *
           std::ldexp(1.0f, -20);
  }
};

// Rows of very different sizes (as embedding updates have), a zero row, sorted unique ids with
// gaps of 1 to ~300 (one- and two-byte varints) and one past 2^16 (three bytes).
RowSparseTensor sample_rows(std::size_t rows, std::size_t dim) {
  Lcg rng{42};
  RowIndices ids = RowIndices::from_shape({rows});
  std::int64_t id = 3;
  for (std::size_t r = 0; r < rows; ++r) {
    ids(r) = id;
    id += 1 + (r == rows / 2 ? 70000 : rng.next() % 300);
  }
  DenseTensor values = DenseTensor::zeros(DType::F32, {rows, dim});
  float* v = values.data<float>();
  for (std::size_t r = 0; r < rows; ++r) {
    const float size = r == 1 ? 0.0f : std::ldexp(1.0f, -static_cast<int>(r % 12));
    for (std::size_t j = 0; j < dim; ++j) v[r * dim + j] = size * rng.unit();
  }
  return RowSparseTensor(std::move(ids), std::move(values),
                         {id + 1, static_cast<std::int64_t>(dim)});
}

DenseTensor sample_dense(std::size_t n) {
  Lcg rng{7};
  DenseTensor t = DenseTensor::zeros(DType::F32, {n / 2, 2});
  for (std::size_t i = 0; i < n; ++i) t.data<float>()[i] = 0.1f * rng.unit() * (i < 256 ? 1 : 8);
  return t;
}

std::uint64_t fnv64(const std::uint8_t* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ULL;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

NamedTensors sample_update() {
  NamedTensors t;
  t.emplace("emb/weight", sample_rows(200, 16));
  t.emplace("out/weight", sample_dense(600));
  return t;
}

std::vector<std::uint8_t> encoded(ValuesCompression values, IdsCompression ids) {
  return write_safetensors(sample_update(), {{"num_examples", "3"}},
                           {{"emb/weight", {values, ids}}, {"out/weight", {values, {}}}});
}

std::vector<std::uint8_t> i8_bytes(const std::vector<int>& values) {
  std::vector<std::uint8_t> out;
  for (const int v : values) out.push_back(static_cast<std::uint8_t>(static_cast<std::int8_t>(v)));
  return out;
}

std::vector<std::uint8_t> f32_bytes(const std::vector<float>& values) {
  std::vector<std::uint8_t> out(4 * values.size());
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::vector<std::uint8_t> i64_bytes(const std::vector<std::int64_t>& values) {
  std::vector<std::uint8_t> out(8 * values.size());
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// A row-sparse tuple "e" of 2 rows of width 2, dense_shape [300, 2], with the given stored ids
// (delta_varint U8 bytes) and int8 values and scales.
std::vector<std::uint8_t> compressed_rows(const std::vector<std::uint8_t>& varints,
                                          const std::vector<int>& q,
                                          const std::vector<float>& scales, std::size_t rows = 2) {
  return raw_safetensors({{"e:indices", DType::U8, {varints.size()}, varints},
                          {"e:values", DType::I8, {rows, 2}, i8_bytes(q)},
                          {"e:scales", DType::F32, {scales.size()}, f32_bytes(scales)},
                          {"e:dense_shape", DType::I64, {2}, i64_bytes({300, 2})}},
                         {{"e:encoding", "row_sparse"},
                          {"e:values_compression", "int8"},
                          {"e:ids_compression", "delta_varint"}});
}

void require_rejected(const std::vector<std::uint8_t>& bytes, const std::string& fragment) {
  CHECK_THROWS_MATCHES(read_safetensors(bytes, {true, true}), fedleaf::InvalidInput,
                       MessageContains(fragment));
}

}  // namespace

TEST_CASE("int8_rows_round_trip_within_half_a_scale_per_value", "[update_compression]") {
  const NamedTensors update = sample_update();
  const SafetensorsFile file =
      read_safetensors(encoded(ValuesCompression::kInt8, IdsCompression::kDeltaVarint));
  const auto& sent = std::get<RowSparseTensor>(update.at("emb/weight"));
  const auto& got = std::get<RowSparseTensor>(file.tensors.at("emb/weight"));
  CHECK(got.indices() == sent.indices());
  CHECK(got.dense_shape() == sent.dense_shape());
  const std::size_t dim = sent.row_size();
  for (std::size_t r = 0; r < sent.num_rows(); ++r) {
    const float* x = sent.values().data<float>() + r * dim;
    const float* y = got.values().data<float>() + r * dim;
    const float scale = int8_scale(x, dim);
    for (std::size_t j = 0; j < dim; ++j) {
      REQUIRE(std::fabs(x[j] - y[j]) <= scale / 2 + std::fabs(x[j]) * 0x1p-23f);
    }
  }
  const float* zero_row = got.values().data<float>() + dim;
  CHECK(std::all_of(zero_row, zero_row + dim, [](float v) { return v == 0.0f; }));
}

TEST_CASE("int8_dense_blocks_of_256_round_trip_within_half_their_scale", "[update_compression]") {
  const DenseTensor sent = sample_dense(600);
  const SafetensorsFile file =
      read_safetensors(encoded(ValuesCompression::kInt8, IdsCompression::kI64));
  const DenseTensor& got = std::get<DenseTensor>(file.tensors.at("out/weight"));
  REQUIRE(got.shape() == sent.shape());
  const float* x = sent.data<float>();
  for (std::size_t block = 0; block < 3; ++block) {
    const std::size_t begin = block * 256;
    const std::size_t n = std::min<std::size_t>(256, 600 - begin);
    const float scale = int8_scale(x + begin, n);
    for (std::size_t i = begin; i < begin + n; ++i) {
      REQUIRE(std::fabs(x[i] - got.data<float>()[i]) <= scale / 2 + std::fabs(x[i]) * 0x1p-23f);
    }
  }
  const SafetensorsIndex index = index_safetensors(encoded(ValuesCompression::kInt8, {}).data(),
                                                   encoded(ValuesCompression::kInt8, {}).size());
  CHECK(index.arrays.at("out/weight:scales").shape == Shape{3});
  CHECK(index.arrays.at("out/weight").dtype == DType::I8);
  CHECK(index.arrays.at("emb/weight:scales").shape == Shape{200});
}

TEST_CASE("f16_values_round_trip_as_ieee_nearest_even", "[update_compression]") {
  const NamedTensors update = sample_update();
  const SafetensorsFile file = read_safetensors(encoded(ValuesCompression::kF16, {}));
  const auto& sent = std::get<RowSparseTensor>(update.at("emb/weight")).values();
  const auto& got = std::get<RowSparseTensor>(file.tensors.at("emb/weight")).values();
  for (std::size_t i = 0; i < sent.size(); ++i) {
    REQUIRE(got.data<float>()[i] == f16_to_f32(f32_to_f16(sent.data<float>()[i])));
  }
  CHECK(file.metadata == Metadata{{"num_examples", "3"}});
}

TEST_CASE("delta_varint_ids_round_trip_exactly_and_take_a_byte_or_two_per_gap",
          "[update_compression]") {
  const std::vector<std::uint8_t> bytes =
      encoded(ValuesCompression::kF32, IdsCompression::kDeltaVarint);
  const SafetensorsIndex index = index_safetensors(bytes.data(), bytes.size());
  const SafetensorsArray& ids = index.arrays.at("emb/weight:indices");
  CHECK(ids.dtype == DType::U8);
  CHECK(ids.shape[0] < 2 * 200);
  CHECK(index.metadata.at("emb/weight:ids_compression") == "delta_varint");
  const SafetensorsFile file = read_safetensors(bytes);
  CHECK(file.tensors.at("emb/weight") == sample_update().at("emb/weight"));
  CHECK(file.tensors.at("out/weight") == sample_update().at("out/weight"));
}

TEST_CASE("varints_are_leb128_of_the_gaps", "[update_compression]") {
  std::uint8_t out[5];
  CHECK(put_varint(0, out) == 1);
  CHECK(out[0] == 0);
  CHECK(put_varint(300, out) == 2);
  CHECK((out[0] == 0xac && out[1] == 0x02));
  CHECK(put_varint(0xffffffffu, out) == 5);
  CHECK(out[4] == 0x0f);
  CHECK(varint_size(127) == 1);
  CHECK(varint_size(128) == 2);
  CHECK(varint_size(0xffffffffu) == 5);
}

TEST_CASE("int8_quantization_is_absmax_over_127_rounded_to_nearest", "[update_compression]") {
  const float x[4] = {1.27f, -0.635f, 0.005f, 0.0f};
  const float scale = int8_scale(x, 4);
  CHECK(scale == 1.27f / 127.0f);
  std::int8_t q[4];
  quantize_int8(x, 4, scale, q);
  CHECK(q[0] == 127);
  CHECK(q[1] == -64);  // -63.5 rounds away from zero
  CHECK(q[2] == 1);    // 0.5 rounds away from zero
  CHECK(q[3] == 0);
  CHECK(dequantize_int8(127, scale) == 1.27f);
}

TEST_CASE("compressed_bytes_are_the_same_on_every_build", "[update_compression]") {
  // Pinned: the wasm core tests (SIMD and baseline) run this case too, so the three builds
  // write (and, through the decoded values' bits, read) the same bytes.
  const auto pin = [](ValuesCompression values, IdsCompression ids) {
    const std::vector<std::uint8_t> bytes = encoded(values, ids);
    const SafetensorsFile file = read_safetensors(bytes);
    const auto& rows = std::get<RowSparseTensor>(file.tensors.at("emb/weight")).values();
    const auto& dense = std::get<DenseTensor>(file.tensors.at("out/weight"));
    return std::vector<std::uint64_t>{fnv64(bytes.data(), bytes.size()),
                                      fnv64(rows.raw_data(), rows.nbytes()),
                                      fnv64(dense.raw_data(), dense.nbytes())};
  };
  CHECK(pin(ValuesCompression::kInt8, IdsCompression::kDeltaVarint) ==
        std::vector<std::uint64_t>{0xf02cab4f485a9b85ull, 0xad1512d9726bca5full,
                                   0xe0ce2ccb186aea96ull});
  CHECK(pin(ValuesCompression::kF16, IdsCompression::kI64) ==
        std::vector<std::uint64_t>{0x27e934daca4267ccull, 0xfaf3e72763fcc8a6ull,
                                   0x48de604e148bf0b3ull});
}

TEST_CASE("write_refuses_what_an_encoding_cannot_hold", "[update_compression]") {
  NamedTensors t;
  t.emplace("big", DenseTensor(xt::xarray<float>{1.0f, 70000.0f}));
  CHECK_THROWS_MATCHES(write_safetensors(t, {}, {{"big", {ValuesCompression::kF16, {}}}}),
                       fedleaf::InvalidInput,
                       MessageContains("tensor 'big': value 1 (70000) is not a finite F16"));
  CHECK_THROWS_MATCHES(
      write_safetensors(t, {}, {{"big", {ValuesCompression::kF32, IdsCompression::kDeltaVarint}}}),
      fedleaf::InvalidInput, MessageContains("'delta_varint' needs a row_sparse tuple"));
  CHECK_THROWS_MATCHES(write_safetensors(t, {}, {{"other", {ValuesCompression::kF16, {}}}}),
                       fedleaf::InvalidInput,
                       MessageContains("compression names 'other', which is not a tensor"));
}

TEST_CASE("decode_rejects_a_scale_that_is_nan_infinite_negative_or_overflowing",
          "[update_compression]") {
  const std::vector<std::uint8_t> ids = {5, 1};
  const std::string rule = "not a finite number in [0, FLT_MAX / 127]";
  require_rejected(compressed_rows(ids, {1, 2, 3, 4}, {1.0f, NAN}), "int8 scale 1 is nan, " + rule);
  require_rejected(compressed_rows(ids, {1, 2, 3, 4}, {INFINITY, 1.0f}), "int8 scale 0 is inf");
  require_rejected(compressed_rows(ids, {1, 2, 3, 4}, {-0.5f, 1.0f}),
                   "tensor 'e': int8 scale 0 is -0.5, " + rule);
  require_rejected(compressed_rows(ids, {1, 2, 3, 4}, {1.0f, 1e37f}),
                   "int8 scale 1 is 9.99999993e+36");
  const SafetensorsFile ok = read_safetensors(compressed_rows(ids, {1, 2, 3, 4}, {1.0f, 0.5f}));
  const auto& rows = std::get<RowSparseTensor>(ok.tensors.at("e"));
  CHECK(rows.indices() == RowIndices{5, 6});
  CHECK(rows.values().data<float>()[3] == 2.0f);
}

TEST_CASE("decode_rejects_int8_minus_128_and_scale_counts_that_disagree_with_the_rows",
          "[update_compression]") {
  const std::vector<std::uint8_t> ids = {5, 1};
  require_rejected(compressed_rows(ids, {1, -128, 3, 4}, {1.0f, 1.0f}),
                   "tensor 'e': int8 value -128 at element 1 is outside [-127, 127]");
  require_rejected(compressed_rows(ids, {1, 2, 3, 4}, {1.0f}),
                   "tensor 'e': 1 int8 scales for 2 rows (one scale per row)");
  const auto no_scales = raw_safetensors({{"w", DType::I8, {2}, i8_bytes({1, 2})}},
                                         {{"w:values_compression", "int8"}});
  require_rejected(no_scales, "tensor 'w': int8 scales array 'w:scales' is missing");
  const auto unnamed = raw_safetensors({{"w", DType::I8, {2}, i8_bytes({1, 2})}});
  require_rejected(unnamed, "tensor 'w': an I8 array holds int8-compressed values");
  const auto wrong_dtype = raw_safetensors({{"w", DType::F32, {1}, f32_bytes({1.0f})}},
                                           {{"w:values_compression", "int8"}});
  require_rejected(wrong_dtype, "tensor 'w': values_compression 'int8' needs an I8 array, got F32");
  const auto unknown = raw_safetensors({{"w", DType::F32, {1}, f32_bytes({1.0f})}},
                                       {{"w:values_compression", "int4"}});
  require_rejected(unknown, "'int4' is not a values compression (expected 'f16' or 'int8')");
}

TEST_CASE("decode_rejects_varints_past_the_array_or_past_2_32", "[update_compression]") {
  const std::vector<int> q = {1, 2, 3, 4};
  const std::vector<float> s = {1.0f, 1.0f};
  require_rejected(compressed_rows({5}, q, s),
                   "tensor 'e': delta_varint row ids: 1 bytes cannot hold the 2 ids the values' "
                   "rows need");
  const auto zero_width =
      raw_safetensors({{"e:indices", DType::U8, {1}, {5}},
                       {"e:values", DType::I8, {std::size_t{4000000000u}, 0}, {}},
                       {"e:scales", DType::F32, {0}, {}},
                       {"e:dense_shape", DType::I64, {2}, i64_bytes({300, 0})}},
                      {{"e:encoding", "row_sparse"}, {"e:ids_compression", "delta_varint"}});
  require_rejected(zero_width, "1 bytes cannot hold the 4000000000 ids");
  require_rejected(compressed_rows({5, 0x81}, q, s), "run past the end of their 2 bytes");
  require_rejected(compressed_rows({5, 0xff, 0xff, 0xff, 0xff, 0x10}, q, s),
                   "varint 1 runs past 2^32");
  require_rejected(compressed_rows({5, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, q, s),
                   "varint 1 runs past 2^32");
  require_rejected(compressed_rows({0xff, 0xff, 0xff, 0xff, 0x0f, 1}, q, s),
                   "id 1 is 4294967296, past 2^32");
}

TEST_CASE("decode_rejects_duplicate_out_of_range_and_miscounted_ids", "[update_compression]") {
  const std::vector<int> q = {1, 2, 3, 4};
  const std::vector<float> s = {1.0f, 1.0f};
  require_rejected(compressed_rows({5, 0}, q, s),
                   "id 1 repeats id 5 (gap 0: ids must be strictly increasing)");
  require_rejected(compressed_rows({5, 1, 1}, q, s), "1 bytes left after the 2 ids");
  require_rejected(compressed_rows({0xac, 0x02, 1}, q, s),
                   "sparse tensor 'e': row index 300 at entry 0 is out of range");
  const auto ids_of_dense = raw_safetensors({{"w", DType::F32, {1}, f32_bytes({1.0f})}},
                                            {{"w:ids_compression", "delta_varint"}});
  require_rejected(ids_of_dense, "tensor 'w': ids_compression 'delta_varint' needs a row_sparse");
}
