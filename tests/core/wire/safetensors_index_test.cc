#include <catch2/catch.hpp>

#include <cstring>

#include "core/wire/safetensors.h"
#include "core/wire/safetensors_index.h"
#include "tests/core/test_util.h"

using namespace fedleaf::core;

TEST_CASE("index_locates_every_stored_array_inside_the_bytes", "[safetensors_index]") {
  NamedTensors in;
  in.emplace("w", DenseTensor(xt::xarray<float>{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}));
  in.emplace("b", DenseTensor(xt::xarray<double>{7.0, 8.0}));
  std::mt19937_64 rng(3);
  in.emplace("g", fedleaf::test::random_row_sparse<float>(rng, {10, 2}, 3));
  const std::vector<std::uint8_t> bytes = write_safetensors(in, {{"task_id", "9"}});

  const SafetensorsIndex index = index_safetensors(bytes.data(), bytes.size());

  CHECK(index.file_size == bytes.size());
  CHECK(index.metadata.at("task_id") == "9");
  CHECK(index.metadata.at("g:encoding") == "row_sparse");
  REQUIRE(index.arrays.size() == 5);  // w, b, g:indices, g:values, g:dense_shape
  const SafetensorsArray& w = index.arrays.at("w");
  CHECK(w.dtype == DType::F32);
  CHECK(w.shape == Shape{2, 3});
  REQUIRE(w.end - w.begin == 24);
  float second_row[3];
  std::memcpy(second_row, bytes.data() + w.begin + row_bytes(w), sizeof second_row);
  CHECK(second_row[0] == 4.f);
  CHECK(second_row[2] == 6.f);
  for (const auto& [name, a] : index.arrays) CHECK(a.end <= bytes.size());
  CHECK(row_bytes(index.arrays.at("b")) == 8);
}

TEST_CASE("index_of_an_empty_file_has_no_arrays", "[safetensors_index]") {
  const std::vector<std::uint8_t> bytes = write_safetensors({});
  const SafetensorsIndex index = index_safetensors(bytes.data(), bytes.size());
  CHECK(index.arrays.empty());
  CHECK(index.metadata.empty());
}

TEST_CASE("row_bytes_is_the_element_size_times_the_trailing_dimensions", "[safetensors_index]") {
  CHECK(row_bytes({DType::F64, {5, 3, 2}, 0, 240}) == 48);
  CHECK(row_bytes({DType::F32, {7}, 0, 28}) == 4);
  CHECK(row_bytes({DType::F32, {7, 0}, 0, 0}) == 0);
}

TEST_CASE("index_of_the_leading_bytes_equals_the_index_of_the_whole_file", "[safetensors_index]") {
  NamedTensors in;
  in.emplace("w", DenseTensor(xt::xarray<float>{{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}));
  const std::vector<std::uint8_t> bytes = write_safetensors(in, {{"round", "2"}});
  std::uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  const std::vector<std::uint8_t> head(bytes.begin(),
                                       bytes.begin() + 8 + static_cast<std::ptrdiff_t>(header));

  const SafetensorsIndex index = index_safetensors(head.data(), head.size(), bytes.size());

  const SafetensorsIndex whole = index_safetensors(bytes.data(), bytes.size());
  CHECK(index.file_size == bytes.size());
  CHECK(index.metadata == whole.metadata);
  CHECK(index.arrays.at("w").begin == whole.arrays.at("w").begin);
  CHECK(index.arrays.at("w").end == whole.arrays.at("w").end);
  CHECK_THROWS_AS(index_safetensors(head.data(), head.size(), bytes.size() - 4),
                  fedleaf::InvalidInput);
  CHECK_THROWS_AS(index_safetensors(head.data(), head.size() - 1, bytes.size()),
                  fedleaf::InvalidInput);
  CHECK_THROWS_AS(index_safetensors(bytes.data(), bytes.size(), head.size()),
                  fedleaf::InvalidInput);
}
