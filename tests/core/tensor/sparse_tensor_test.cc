#include <catch2/catch.hpp>

#include "core/tensor/row_sparse_tensor.h"
#include "core/tensor/sparse_tensor.h"

using namespace fedleaf::core;
using Catch::Matchers::Contains;

namespace {
DenseTensor f32(std::initializer_list<float> v) { return DenseTensor(xt::xarray<float>(v)); }
}  // namespace

TEST_CASE("sparse_tensor_accepts_a_well_formed_tuple", "[sparse]") {
  SparseTensor s(CooIndices{{0, 1}, {2, 3}}, f32({1.f, 2.f}), {3, 4});
  CHECK(s.nnz() == 2);
  CHECK(s.rank() == 2);
  CHECK(s.index_dtype() == DType::I64);
}

TEST_CASE("sparse_tensor_rejects_index_out_of_range", "[sparse]") {
  CHECK_THROWS_WITH(
      SparseTensor(CooIndices{{0, 4}}, f32({1.f}), {3, 4}, "g"),
      Contains("g: index 4 at entry 0, dimension 1 is out of range for dense_shape [3, 4]"));
  CHECK_THROWS_WITH(SparseTensor(CooIndices{{-1, 0}}, f32({1.f}), {3, 4}, "g"),
                    Contains("out of range"));
}

TEST_CASE("sparse_tensor_rejects_values_length_mismatch", "[sparse]") {
  CHECK_THROWS_WITH(SparseTensor(CooIndices{{0, 1}, {1, 1}}, f32({1.f}), {3, 4}, "g"),
                    Contains("g: values must have shape [2]"));
}

TEST_CASE("sparse_tensor_rejects_rank_mismatch_and_negative_shape", "[sparse]") {
  CHECK_THROWS_WITH(SparseTensor(CooIndices{{0, 1}}, f32({1.f}), {3, 4, 5}, "g"),
                    Contains("indices have 2 columns but dense_shape [3, 4, 5] has rank 3"));
  CHECK_THROWS_WITH(SparseTensor(CooIndices::from_shape({0, 1}), f32({}), {-3}, "g"),
                    Contains("negative dimension"));
}

TEST_CASE("empty_sparse_tensor_gets_indices_of_the_dense_rank", "[sparse]") {
  SparseTensor s(CooIndices::from_shape({0, 0}), f32({}), {3, 4});
  CHECK(s.indices().shape()[1] == 2);
}

TEST_CASE("index_dtype_accepts_only_integer_index_types", "[sparse]") {
  SparseTensor s(CooIndices{{1}}, f32({1.f}), {3});
  s.set_index_dtype(DType::I32);
  CHECK(s.index_dtype() == DType::I32);
  CHECK_THROWS_AS(s.set_index_dtype(DType::F32), fedleaf::InvalidInput);
}

TEST_CASE("row_sparse_tensor_checks_value_shape_and_row_range", "[sparse]") {
  RowSparseTensor ok(RowIndices{1, 3}, DenseTensor::zeros(DType::F32, {2, 5}), {4, 5});
  CHECK(ok.num_rows() == 2);
  CHECK(ok.row_size() == 5);
  CHECK_THROWS_WITH(
      RowSparseTensor(RowIndices{1, 3}, DenseTensor::zeros(DType::F32, {2, 4}), {4, 5}, "emb"),
      Contains("emb: values must have shape [2, 5]"));
  CHECK_THROWS_WITH(
      RowSparseTensor(RowIndices{4}, DenseTensor::zeros(DType::F32, {1, 5}), {4, 5}, "emb"),
      Contains("emb: row index 4 at entry 0 is out of range for dense_shape [4, 5]"));
  CHECK_THROWS_WITH(RowSparseTensor(RowIndices{}, DenseTensor::zeros(DType::F32, {0}), {}, "emb"),
                    Contains("at least one dimension"));
}
