// Ids "u32" (update_compression.h): a sparse tuple's ids as a U32 array, 4 bytes an id, that
// reading widens to I64 and checks like any ids; a U32 array anywhere else is refused.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/wire/safetensors.h"
#include "core/wire/safetensors_index.h"
#include "core/wire/update_compression.h"
#include "tests/core/error_matchers.h"
#include "tests/core/raw_safetensors.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;
using fedleaf::test::raw_safetensors;

namespace {

const TensorCompression kU32{ValuesCompression::kF32, IdsCompression::kU32};

NamedTensors sample() {
  NamedTensors t;
  RowIndices rows = RowIndices::from_shape({3});
  rows(0) = 2;
  rows(1) = 70000;
  rows(2) = 4000000000;
  t.emplace("emb",
            RowSparseTensor(std::move(rows), DenseTensor(xt::xarray<float>{{1, 2}, {3, 4}, {5, 6}}),
                            {4000000001, 2}));
  CooIndices coo = CooIndices::from_shape({2, 2});
  coo(0, 0) = 1;
  coo(0, 1) = 0;
  coo(1, 0) = 3;
  coo(1, 1) = 1;
  t.emplace("c", SparseTensor(std::move(coo), DenseTensor(xt::xarray<float>{7, 8}), {4, 2}));
  return t;
}

std::vector<std::uint8_t> u32_bytes(const std::vector<std::uint32_t>& ids) {
  std::vector<std::uint8_t> out(4 * ids.size());
  std::memcpy(out.data(), ids.data(), out.size());
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

}  // namespace

TEST_CASE("u32_ids_round_trip_as_a_u32_array_of_4_bytes_an_id", "[update_compression]") {
  const std::vector<std::uint8_t> bytes =
      write_safetensors(sample(), {}, {{"emb", kU32}, {"c", kU32}});
  const SafetensorsIndex index = index_safetensors(bytes.data(), bytes.size());
  CHECK(index.arrays.at("emb:indices").dtype == DType::U32);
  CHECK(index.arrays.at("emb:indices").end - index.arrays.at("emb:indices").begin == 12);
  CHECK(index.arrays.at("c:indices").dtype == DType::U32);
  CHECK(index.arrays.at("c:indices").shape == Shape{2, 2});
  CHECK(index.metadata.count("emb:ids_compression") == 0);  // the dtype says it
  const SafetensorsFile file = read_safetensors(bytes, {true, true});
  CHECK(file.tensors.at("emb") == sample().at("emb"));
  CHECK(file.tensors.at("c") == sample().at("c"));
  CHECK(parse_ids_compression("u32") == IdsCompression::kU32);
  CHECK(ids_compression_name(IdsCompression::kU32) == "u32");
  CHECK(parse_dtype("U32") == DType::U32);
  CHECK(is_storage_only(DType::U32));
}

TEST_CASE("a_u32_id_beyond_the_rows_is_refused_naming_the_tensor", "[update_compression]") {
  const auto rows = [](std::uint32_t second) {
    return raw_safetensors({{"e:indices", DType::U32, {2}, u32_bytes({5, second})},
                            {"e:values", DType::F32, {2, 2}, f32_bytes({1, 2, 3, 4})},
                            {"e:dense_shape", DType::I64, {2}, i64_bytes({300, 2})}},
                           {{"e:encoding", "row_sparse"}});
  };
  CHECK(std::get<RowSparseTensor>(read_safetensors(rows(299)).tensors.at("e")).indices()(1) == 299);
  CHECK_THROWS_MATCHES(read_safetensors(rows(300)), fedleaf::InvalidInput,
                       MessageContains("'e'") && MessageContains("300"));
  CHECK_THROWS_MATCHES(read_safetensors(rows(0xffffffffu)), fedleaf::InvalidInput,
                       MessageContains("'e'") && MessageContains("4294967295"));
}

TEST_CASE("a_u32_array_that_is_not_a_tuples_ids_is_refused", "[update_compression]") {
  CHECK_THROWS_MATCHES(
      read_safetensors(raw_safetensors({{"w", DType::U32, {2}, u32_bytes({1, 2})}})),
      fedleaf::InvalidInput,
      MessageContains("tensor 'w': a U32 array holds the ids of a sparse tuple"));
  NamedTensors dense;
  dense.emplace("w", DenseTensor(xt::xarray<float>{1, 2}));
  CHECK_THROWS_MATCHES(write_safetensors(dense, {}, {{"w", kU32}}), fedleaf::InvalidInput,
                       MessageContains("tensor 'w': ids_compression 'u32' needs a sparse tuple"));
}

TEST_CASE("u32_ids_refuse_an_id_past_2_to_the_32_when_written", "[update_compression]") {
  RowIndices rows = RowIndices::from_shape({1});
  rows(0) = 5000000000;
  NamedTensors t;
  t.emplace("emb", RowSparseTensor(std::move(rows), DenseTensor(xt::xarray<float>{{1, 2}}),
                                   {5000000001, 2}));
  CHECK_THROWS_MATCHES(write_safetensors(t, {}, {{"emb", kU32}}), fedleaf::InvalidInput,
                       MessageContains("emb: index 5000000000 does not fit the U32 index dtype"));
}
