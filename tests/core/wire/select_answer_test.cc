// The select answer against a dense reference: decode the whole model, slice the rows, and the
// answer must decode to exactly that (and be byte-identical to write_safetensors of it).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>

#include "core/tensor/half_float.h"
#include "core/wire/safetensors.h"
#include "core/wire/select_answer.h"
#include "tests/core/error_matchers.h"
#include "tests/core/test_util.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

template <class T>
DenseTensor random_dense(std::mt19937_64& rng, const Shape& shape) {
  xt::xarray<T> a = xt::xarray<T>::from_shape(shape);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<T>(value(rng));
  return DenseTensor(std::move(a));
}

std::vector<std::uint32_t> random_ids(std::mt19937_64& rng, std::size_t rows) {
  std::vector<std::uint32_t> ids;
  const double p = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  for (std::size_t r = 0; r < rows; ++r) {
    if (std::uniform_real_distribution<double>(0.0, 1.0)(rng) < p) {
      ids.push_back(static_cast<std::uint32_t>(r));
    }
  }
  return ids;
}

// The reference: rows `ids` of `dense`, sliced from the decoded tensor.
RowSparseTensor slice_rows(const DenseTensor& dense, const std::vector<std::uint32_t>& ids) {
  const Shape shape = dense.shape();
  std::size_t row_elements = 1;
  for (std::size_t d = 1; d < shape.size(); ++d) row_elements *= shape[d];
  const std::size_t row_size = row_elements * dtype_size(dense.dtype());
  Shape values_shape = shape;
  values_shape[0] = ids.size();
  DenseTensor values = DenseTensor::zeros(dense.dtype(), values_shape);
  RowIndices indices = RowIndices::from_shape({ids.size()});
  for (std::size_t i = 0; i < ids.size(); ++i) {
    indices(i) = ids[i];
    if (row_size == 0) continue;  // a dimension of 0: no bytes, and memcpy wants real pointers
    std::memcpy(values.raw_data() + i * row_size, dense.raw_data() + ids[i] * row_size, row_size);
  }
  return RowSparseTensor(std::move(indices), std::move(values),
                         DenseShape(shape.begin(), shape.end()));
}

}  // namespace

TEST_CASE("select_answer_equals_rows_sliced_from_the_decoded_model", "[select_answer]") {
  std::mt19937_64 rng(20261123);
  for (int trial = 0; trial < 60; ++trial) {
    const auto dim = [&](std::size_t lo, std::size_t hi) {
      return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
    };
    NamedTensors model;
    model.emplace("emb/weight", random_dense<float>(rng, {dim(1, 40), dim(1, 5)}));
    model.emplace("emb3/weight", random_dense<double>(rng, {dim(1, 30), dim(1, 3), dim(0, 3)}));
    model.emplace("wide/weight", random_dense<double>(rng, {dim(1, 20), dim(1, 4)}));
    model.emplace("out/bias", random_dense<float>(rng, {dim(1, 3)}));
    model.emplace("kept_sparse", fedleaf::test::random_row_sparse<float>(rng, {10, 2}, 3));
    const Metadata model_meta{{"origin", "test"}};
    const std::vector<std::uint8_t> bytes = write_safetensors(model, model_meta);
    const SafetensorsIndex index = index_safetensors(bytes.data(), bytes.size());
    const NamedTensors decoded = read_safetensors(bytes).tensors;

    SelectRequest request;
    for (const char* name : {"emb/weight", "emb3/weight", "wide/weight"}) {
      if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) continue;  // sometimes whole
      const std::size_t rows = std::get<DenseTensor>(decoded.at(name)).shape()[0];
      request.rows[name] = random_ids(rng, rows);
    }
    const Metadata extra{{"model_etag", "abc"}, {"round", std::to_string(trial)}};

    const std::vector<std::uint8_t> answer =
        write_select_answer(bytes.data(), bytes.size(), index, request, extra);
    const SafetensorsFile file = read_safetensors(answer);

    NamedTensors expected = decoded;
    for (const auto& [name, ids] : request.rows) {
      expected.erase(name);
      expected.emplace(name, slice_rows(std::get<DenseTensor>(decoded.at(name)), ids));
    }
    Metadata expected_meta = model_meta;
    expected_meta.insert(extra.begin(), extra.end());
    REQUIRE(file.tensors.size() == expected.size());
    for (const auto& [name, tensor] : expected) {
      INFO("trial " << trial << ", tensor " << name);
      CHECK(file.tensors.at(name) == tensor);
    }
    CHECK(file.metadata == expected_meta);
    CHECK(answer == write_safetensors(expected, expected_meta));
  }
}

TEST_CASE("select_answer_of_no_rows_holds_an_empty_tuple", "[select_answer]") {
  NamedTensors model;
  model.emplace("e", DenseTensor::zeros(DType::F32, {5, 2}));
  const std::vector<std::uint8_t> bytes = write_safetensors(model);
  const SafetensorsIndex index = index_safetensors(bytes.data(), bytes.size());
  SelectRequest request;
  request.rows["e"] = {};

  const SafetensorsFile file =
      read_safetensors(write_select_answer(bytes.data(), bytes.size(), index, request, {}));

  const auto& rows = std::get<RowSparseTensor>(file.tensors.at("e"));
  CHECK(rows.num_rows() == 0);
  CHECK(rows.dense_shape() == DenseShape{5, 2});
}

TEST_CASE("select_answer_never_reads_outside_the_model", "[select_answer]") {
  NamedTensors model;
  model.emplace("e", DenseTensor::zeros(DType::F32, {5, 2}));
  model.emplace("s", DenseTensor(xt::xarray<float>(2.f)));
  const std::vector<std::uint8_t> bytes = write_safetensors(model);
  const SafetensorsIndex index = index_safetensors(bytes.data(), bytes.size());
  SelectRequest out_of_range;
  out_of_range.rows["e"] = {4, 5};
  SelectRequest unknown;
  unknown.rows["x"] = {0};
  SelectRequest rank0;
  rank0.rows["s"] = {};

  CHECK_THROWS_MATCHES(write_select_answer(bytes.data(), bytes.size(), index, out_of_range, {}),
                       fedleaf::InvalidInput,
                       MessageContains("tensor 'e': row id 5 is out of range: the tensor has 5"));
  CHECK_THROWS_MATCHES(write_select_answer(bytes.data(), bytes.size(), index, unknown, {}),
                       fedleaf::InvalidInput,
                       MessageContains("tensor 'x' is not a dense array of rank >= 1"));
  CHECK_THROWS_MATCHES(write_select_answer(bytes.data(), bytes.size(), index, rank0, {}),
                       fedleaf::InvalidInput,
                       MessageContains("tensor 's' is not a dense array of rank >= 1"));
  CHECK_THROWS_MATCHES(write_select_answer(bytes.data(), bytes.size() - 1, index, {}, {}),
                       fedleaf::Error, MessageContains("the index describes"));
}

TEST_CASE("select_answer_sends_the_f16_download_tensors_as_f16", "[select_answer]") {
  std::mt19937_64 rng(31);
  NamedTensors model;
  DenseTensor emb = random_dense<float>(rng, {20, 4});
  emb.data<float>()[5 * 4 + 1] = 1e6f;  // beyond F16's range: saturates
  emb.data<float>()[7 * 4 + 2] = -1e6f;
  model.emplace("emb/weight", emb);
  model.emplace("out/bias", random_dense<float>(rng, {3}));
  model.emplace("out/weight", random_dense<float>(rng, {4, 2}));
  const std::vector<std::uint8_t> bytes = write_safetensors(model);
  const SafetensorsIndex index = index_safetensors(bytes.data(), bytes.size());
  SelectRequest request;
  request.rows["emb/weight"] = {1, 5, 7};

  const std::vector<std::uint8_t> answer = write_select_answer(
      bytes.data(), bytes.size(), index, request, {{"round", "2"}}, {"emb/weight", "out/bias"});

  const auto through_f16 = [](DenseTensor t) {
    for (std::size_t i = 0; i < t.size(); ++i) {
      float& v = t.data<float>()[i];
      v = f16_to_f32(f32_to_f16(std::clamp(v, -65504.0f, 65504.0f)));
    }
    return t;
  };
  NamedTensors expected;
  // Beside F16 values the ids are I32 (the tensor's rows fit).
  RowSparseTensor rows = slice_rows(through_f16(emb), {1, 5, 7});
  rows.set_index_dtype(DType::I32);
  expected.emplace("emb/weight", std::move(rows));
  expected.emplace("out/bias", through_f16(std::get<DenseTensor>(model.at("out/bias"))));
  expected.emplace("out/weight", model.at("out/weight"));
  const TensorCompression f16{ValuesCompression::kF16, IdsCompression::kI64};
  CHECK(answer ==
        write_safetensors(expected, {{"round", "2"}}, {{"emb/weight", f16}, {"out/bias", f16}}));
  const SafetensorsFile file = read_safetensors(answer, {/*require_finite=*/true});
  CHECK(std::get<RowSparseTensor>(file.tensors.at("emb/weight")).values().data<float>()[5] ==
        65504.0f);
  CHECK(file.metadata == Metadata{{"round", "2"}});
}
