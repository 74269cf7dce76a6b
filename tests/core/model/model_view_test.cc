#include "core/model/model_view.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/data/dataset.h"
#include "core/tensor/half_float.h"
#include "core/tensor/row_sparse_tensor.h"
#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

// A model's bytes, its index and a reader over them.
struct StoredModel {
  explicit StoredModel(const NamedTensors& tensors, const Metadata& metadata = {})
      : bytes(write_safetensors(tensors, metadata)),
        index(index_safetensors(bytes.data(), bytes.size())),
        read([this](std::uint64_t begin, std::size_t size, std::uint8_t* out) {
          std::memcpy(out, bytes.data() + begin, size);
        }) {}
  std::vector<std::uint8_t> bytes;
  SafetensorsIndex index;
  ModelByteReader read;
};

DenseTensor f32(const Shape& shape, const std::vector<float>& values) {
  DenseTensor t = DenseTensor::zeros(DType::F32, shape);
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

ParameterSpec spec(const std::string& name, const Shape& shape) {
  ParameterSpec p;
  p.name = name;
  p.shape = shape;
  p.declared_by = "plan.model.layers[0]";
  return p;
}

}  // namespace

TEST_CASE("take_parameter_reads_a_dense_parameter_and_checks_its_shape", "[model_view]") {
  NamedTensors t;
  t.emplace("w", f32({2, 2}, {1, 2, 3, 4}));
  const StoredModel m(t);
  const ModelView view(m.index, m.read);

  const DenseTensor w = take_parameter(view, spec("w", {2, 2}));

  CHECK(std::vector<float>(w.data<float>(), w.data<float>() + 4) == std::vector<float>{1, 2, 3, 4});
  CHECK(view.encoding("w") == "dense");
  CHECK(view.encoding("absent").empty());
  CHECK_THROWS_MATCHES(take_parameter(view, spec("w", {4})), fedleaf::InvalidInput,
                       MessageContains("model tensor 'w': shape [2, 2] differs from [4]"));
  CHECK_THROWS_MATCHES(take_parameter(view, spec("v", {4})), fedleaf::InvalidInput,
                       MessageContains("model: missing tensor 'v' declared by"));
}

TEST_CASE("check_finite_names_the_tensor_of_a_nan_or_infinity", "[model_view]") {
  const std::vector<float> fine = {0.0f, -1.0f, 3e38f};
  const std::vector<float> nan = {0.0f, NAN};
  const std::vector<float> inf = {INFINITY};

  CHECK_NOTHROW(check_finite("w", fine.data(), fine.size()));
  CHECK_THROWS_MATCHES(check_finite("w", nan.data(), nan.size()), fedleaf::InvalidInput,
                       MessageContains("model tensor 'w': a value is not finite"));
  CHECK_THROWS_MATCHES(check_finite("w", inf.data(), inf.size()), fedleaf::InvalidInput,
                       MessageContains("a value is not finite"));
}

TEST_CASE("read_floats_from_widens_f16_to_f32", "[model_view]") {
  const std::vector<std::uint16_t> halves = {0x3c00, 0xc000};  // 1.0, -2.0
  const ModelByteReader read = [&](std::uint64_t begin, std::size_t size, std::uint8_t* out) {
    std::memcpy(out, reinterpret_cast<const std::uint8_t*>(halves.data()) + begin, size);
  };
  float out[2] = {0, 0};

  read_floats_from(read, DType::F16, 0, 2, out);

  CHECK(out[0] == 1.0f);
  CHECK(out[1] == -2.0f);
}

TEST_CASE("locate_rows_finds_rows_in_a_table_or_a_selection_and_names_a_missing_row",
          "[model_view]") {
  const Dataset data = Dataset::from_csr({0, 2}, {1, 3}, {}, {0}, 4);
  NamedTensors whole;
  whole.emplace("emb/weight", f32({4, 2}, {0, 0, 1, 1, 2, 2, 3, 3}));
  NamedTensors selected;
  selected.emplace("emb/weight",
                   RowSparseTensor(RowIndices{1, 2, 3}, f32({3, 2}, {1, 1, 2, 2, 3, 3}), {4, 2}));
  NamedTensors lacking;
  lacking.emplace("emb/weight", RowSparseTensor(RowIndices{1}, f32({1, 2}, {1, 1}), {4, 2}));
  const StoredModel a(whole), b(selected), c(lacking);
  StoredValues in_table, in_selection, none;

  locate_rows(ModelView(a.index, a.read), spec("emb/weight", {4, 2}), data.distinct_ids(),
              in_table);
  locate_rows(ModelView(b.index, b.read), spec("emb/weight", {4, 2}), data.distinct_ids(),
              in_selection);

  CHECK(in_table.compact);
  CHECK_FALSE(in_table.from_selection);
  CHECK(in_selection.from_selection);
  CHECK(in_selection.positions == std::vector<std::uint32_t>{0, 2});  // rows 1 and 3
  CHECK_THROWS_MATCHES(
      locate_rows(ModelView(c.index, c.read), spec("emb/weight", {4, 2}), data.distinct_ids(),
                  none),
      fedleaf::InvalidInput,
      MessageContains("the data touch row 3, which the selected rows do not hold"));
}
