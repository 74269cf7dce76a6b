#include <catch2/catch.hpp>

#include <cstring>
#include <nlohmann/json.hpp>

#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"
#include "tests/core/raw_safetensors.h"
#include "tests/core/test_util.h"

using namespace fedleaf::core;

namespace {

std::uint64_t header_length(const std::vector<std::uint8_t>& b) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | b[i];
  return n;
}

nlohmann::json header_of(const std::vector<std::uint8_t>& b) {
  const char* p = reinterpret_cast<const char*>(b.data() + 8);
  return nlohmann::json::parse(p, p + header_length(b));
}

}  // namespace

TEST_CASE("dense_tensors_of_every_dtype_round_trip", "[safetensors]") {
  NamedTensors in;
  in.emplace("f32", DenseTensor(xt::xarray<float>{{1.5f, -2.f}, {0.f, 3.25f}}));
  in.emplace("f64", DenseTensor(xt::xarray<double>{1e300, -1e-300, 0.5}));
  in.emplace("i32", DenseTensor(xt::xarray<std::int32_t>{-7, 2147483647}));
  in.emplace("i64", DenseTensor(xt::xarray<std::int64_t>{{-9000000000000LL, 5LL}}));
  in.emplace("u8", DenseTensor(xt::xarray<std::uint8_t>{0, 255, 7}));
  in.emplace("scalar", DenseTensor(xt::xarray<float>(4.f)));
  in.emplace("empty", DenseTensor::zeros(DType::F32, {0, 3}));
  const Metadata meta{{"task_id", "t-1"}, {"num_examples", "12"}};

  const std::vector<std::uint8_t> bytes = write_safetensors(in, meta);
  SafetensorsFile out = read_safetensors(bytes);

  CHECK(out.metadata == meta);
  REQUIRE(out.tensors.size() == in.size());
  for (const auto& [name, t] : in) {
    INFO(name);
    CHECK(std::get<DenseTensor>(out.tensors.at(name)) == std::get<DenseTensor>(t));
  }
}

TEST_CASE("header_is_padded_to_8_bytes_and_data_is_packed_aligned", "[safetensors]") {
  NamedTensors in;
  in.emplace("a_u8", DenseTensor(xt::xarray<std::uint8_t>{1, 2, 3}));
  in.emplace("b_f64", DenseTensor(xt::xarray<double>{1., 2.}));
  in.emplace("c_f32", DenseTensor(xt::xarray<float>{1.f}));

  const auto bytes = write_safetensors(in);
  const std::uint64_t n = header_length(bytes);
  CHECK(n % 8 == 0);
  CHECK(bytes.size() == 8 + n + 16 + 4 + 3);
  const auto h = header_of(bytes);
  CHECK(h["b_f64"]["data_offsets"] == nlohmann::json{0, 16});
  CHECK(h["c_f32"]["data_offsets"] == nlohmann::json{16, 20});
  CHECK(h["a_u8"]["data_offsets"] == nlohmann::json{20, 23});
  CHECK(h["a_u8"]["dtype"] == "U8");
  CHECK(h["b_f64"]["shape"] == nlohmann::json{2});
  CHECK_FALSE(h.contains("__metadata__"));
}

TEST_CASE("equal_inputs_serialize_to_identical_bytes", "[safetensors]") {
  std::mt19937_64 rng(3);
  NamedTensors a;
  a.emplace("emb", fedleaf::test::random_row_sparse<float>(rng, {100, 8}, 10));
  a.emplace("w", DenseTensor::zeros(DType::F32, {4, 4}));
  NamedTensors b = a;
  CHECK(write_safetensors(a, {{"k", "v"}}) == write_safetensors(b, {{"k", "v"}}));
}

TEST_CASE("write_safetensors_string_holds_the_bytes_of_write_safetensors", "[safetensors]") {
  std::mt19937_64 rng(4);
  NamedTensors t;
  t.emplace("emb", fedleaf::test::random_row_sparse<float>(rng, {100, 8}, 10));
  t.emplace("w", DenseTensor(xt::xarray<float>{{1.5f, -2.f}, {0.f, 3.25f}}));
  const Metadata meta{{"k", "v"}};
  const CompressionByTensor int8{{"emb", {ValuesCompression::kInt8, IdsCompression::kI64}}};
  for (const CompressionByTensor& how : {CompressionByTensor{}, int8}) {
    const std::vector<std::uint8_t> bytes = write_safetensors(t, meta, how);
    CHECK(write_safetensors_string(t, meta, how) == std::string(bytes.begin(), bytes.end()));
  }
  const std::vector<std::uint8_t> empty = write_safetensors({});
  CHECK(write_safetensors_string({}) == std::string(empty.begin(), empty.end()));
}

TEMPLATE_TEST_CASE("coo_tuples_round_trip_as_components", "[safetensors]", float, double) {
  std::mt19937_64 rng(GENERATE(1, 2, 3));
  SparseTensor s = fedleaf::test::random_coo<TestType>(rng, {50, 7, 3}, 25);
  NamedTensors in;
  in.emplace("grad", s);

  const auto bytes = write_safetensors(in, {{"note", "x"}});
  const auto h = header_of(bytes);
  CHECK(h["__metadata__"]["grad:encoding"] == "coo");
  CHECK(h["grad:indices"]["shape"] == nlohmann::json{25, 3});
  CHECK(h["grad:dense_shape"]["dtype"] == "I64");
  SafetensorsFile out = read_safetensors(bytes);

  CHECK(out.metadata == Metadata{{"note", "x"}});
  REQUIRE(out.tensors.size() == 1);
  CHECK(std::get<SparseTensor>(out.tensors.at("grad")) == s);
}

TEST_CASE("row_sparse_tuples_round_trip_with_i32_indices", "[safetensors]") {
  std::mt19937_64 rng(5);
  RowSparseTensor r = fedleaf::test::random_row_sparse<float>(rng, {262144, 16}, 30);
  r.set_index_dtype(DType::I32);
  NamedTensors in;
  in.emplace("emb/weight", r);
  in.emplace("out/bias", DenseTensor(xt::xarray<float>{0.1f, 0.2f}));

  const auto bytes = write_safetensors(in);
  CHECK(header_of(bytes)["emb/weight:indices"]["dtype"] == "I32");
  SafetensorsFile out = read_safetensors(bytes);

  const auto& got = std::get<RowSparseTensor>(out.tensors.at("emb/weight"));
  CHECK(got == r);
  CHECK(got.index_dtype() == DType::I32);
  CHECK(out.metadata.empty());
}

TEST_CASE("write_rejects_reserved_metadata_keys_and_name_collisions", "[safetensors]") {
  NamedTensors in;
  in.emplace("w", DenseTensor::zeros(DType::F32, {1}));
  CHECK_THROWS_WITH(write_safetensors(in, {{"w:encoding", "coo"}}),
                    Catch::Matchers::Contains("reserved"));
  in.emplace("s", SparseTensor(CooIndices{{0}}, DenseTensor(xt::xarray<float>{1.f}), {2}));
  in.emplace("s:values", DenseTensor::zeros(DType::F32, {1}));
  CHECK_THROWS_WITH(write_safetensors(in), Catch::Matchers::Contains("'s:values' is used twice"));
}

TEST_CASE("write_rejects_i32_indices_that_do_not_fit", "[safetensors]") {
  SparseTensor s(CooIndices{{std::int64_t{1} << 33}}, DenseTensor(xt::xarray<float>{1.f}),
                 {std::int64_t{1} << 34});
  s.set_index_dtype(DType::I32);
  NamedTensors in;
  in.emplace("big", s);
  CHECK_THROWS_WITH(write_safetensors(in), Catch::Matchers::Contains("does not fit the I32"));
}

TEST_CASE("components_without_encoding_metadata_stay_dense", "[safetensors]") {
  NamedTensors in;
  in.emplace("x:indices", DenseTensor(xt::xarray<std::int64_t>{1, 2}));
  SafetensorsFile out = read_safetensors(write_safetensors(in));
  CHECK(std::holds_alternative<DenseTensor>(out.tensors.at("x:indices")));
}

TEST_CASE("a_large_tensor_round_trips", "[safetensors]") {
  xt::xarray<float> big = xt::xarray<float>::from_shape({1000, 1000});
  for (std::size_t i = 0; i < big.size(); ++i) big.data()[i] = static_cast<float>(i) * 0.5f;
  NamedTensors in;
  in.emplace("big", DenseTensor(big));
  SafetensorsFile out = read_safetensors(write_safetensors(in));
  CHECK(std::get<DenseTensor>(out.tensors.at("big")) == DenseTensor(big));
}

TEST_CASE("f16_and_bf16_arrays_are_read_as_f32_tensors_and_written_back_as_f32", "[safetensors]") {
  using fedleaf::test::half_bytes;
  const std::vector<std::uint8_t> bytes = fedleaf::test::raw_safetensors(
      {{"a", DType::F16, {2, 2}, half_bytes({0x3c00, 0xc000, 0x0001, 0x8000})},
       {"b", DType::BF16, {3}, half_bytes({0x3f80, 0x4040, 0xbe80})},
       {"e:indices", DType::I64, {1}, std::vector<std::uint8_t>{1, 0, 0, 0, 0, 0, 0, 0}},
       {"e:values", DType::F16, {1, 2}, half_bytes({0x4200, 0x3800})},
       {"e:dense_shape",
        DType::I64,
        {2},
        std::vector<std::uint8_t>{4, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}}},
      {{"e:encoding", "row_sparse"}, {"note", "kept"}});

  const SafetensorsFile file = read_safetensors(bytes, {/*require_finite=*/true});

  const auto& a = std::get<DenseTensor>(file.tensors.at("a"));
  REQUIRE(a.dtype() == DType::F32);
  CHECK(a.shape() == Shape{2, 2});
  CHECK(std::vector<float>(a.data<float>(), a.data<float>() + 4) ==
        std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24), -0.0f});
  CHECK(std::signbit(a.data<float>()[3]));
  const auto& b = std::get<DenseTensor>(file.tensors.at("b"));
  CHECK(std::vector<float>(b.data<float>(), b.data<float>() + 3) ==
        std::vector<float>{1.0f, 3.0f, -0.25f});
  const auto& e = std::get<RowSparseTensor>(file.tensors.at("e"));
  CHECK(e.values().dtype() == DType::F32);
  CHECK(e.values().data<float>()[0] == 3.0f);
  CHECK(e.values().data<float>()[1] == 0.5f);
  CHECK(file.metadata.at("note") == "kept");
  const SafetensorsFile again = read_safetensors(write_safetensors(file.tensors, file.metadata));
  CHECK(header_of(write_safetensors(file.tensors))["a"]["dtype"] == "F32");
  CHECK(std::get<DenseTensor>(again.tensors.at("b")) == b);
}

TEST_CASE("non_finite_f16_and_bf16_values_are_rejected_when_finite_values_are_required",
          "[safetensors]") {
  using fedleaf::test::half_bytes;
  using fedleaf::test::MessageContains;
  const auto inf_f16 =
      fedleaf::test::raw_safetensors({{"w", DType::F16, {2}, half_bytes({0x3c00, 0x7c00})}});
  const auto nan_bf16 =
      fedleaf::test::raw_safetensors({{"v", DType::BF16, {1}, half_bytes({0x7fc0})}});

  CHECK_THROWS_MATCHES(read_safetensors(inf_f16, {/*require_finite=*/true}), fedleaf::InvalidInput,
                       MessageContains("tensor 'w': element 1 is not finite"));
  CHECK_THROWS_MATCHES(read_safetensors(nan_bf16, {/*require_finite=*/true}), fedleaf::InvalidInput,
                       MessageContains("tensor 'v': element 0 is not finite"));
  CHECK(std::isinf(
      std::get<DenseTensor>(read_safetensors(inf_f16).tensors.at("w")).data<float>()[1]));
}

TEST_CASE("an_f16_array_whose_bytes_do_not_match_its_shape_is_rejected", "[safetensors]") {
  auto bytes = fedleaf::test::raw_safetensors(
      {{"w", DType::F16, {3}, fedleaf::test::half_bytes({0x3c00, 0x3c00, 0x3c00})}});
  bytes.pop_back();
  CHECK_THROWS_AS(read_safetensors(bytes), fedleaf::InvalidInput);
}
