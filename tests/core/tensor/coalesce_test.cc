#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "core/tensor/coalesce.h"
#include "tests/core/test_util.h"
#include "tests/core/to_dense.h"

using namespace fedleaf::core;
using fedleaf::test::random_coo;
using fedleaf::test::random_row_sparse;

namespace {

// Reference: a map from coordinates to summed value, independent of linear indexing.
template <class T>
std::map<std::vector<std::int64_t>, double> reference_sums(const SparseTensor& s) {
  std::map<std::vector<std::int64_t>, double> sums;
  for (std::size_t i = 0; i < s.nnz(); ++i) {
    std::vector<std::int64_t> key(s.rank());
    for (std::size_t d = 0; d < s.rank(); ++d) key[d] = s.indices()(i, d);
    sums[key] += static_cast<double>(s.values().data<T>()[i]);
  }
  return sums;
}

}  // namespace

TEMPLATE_TEST_CASE("coalesce_matches_a_map_reference_on_random_coo", "[coalesce]", float, double) {
  std::mt19937_64 rng(GENERATE(1, 2, 3, 4, 5));
  const std::size_t rank = std::uniform_int_distribution<std::size_t>(1, 3)(rng);
  DenseShape shape(rank);
  for (auto& d : shape) d = std::uniform_int_distribution<std::int64_t>(1, 7)(rng);
  const std::size_t nnz = std::uniform_int_distribution<std::size_t>(0, 60)(rng);
  SparseTensor s = random_coo<TestType>(rng, shape, nnz);

  SparseTensor c = coalesce(s);

  const auto ref = reference_sums<TestType>(s);
  REQUIRE(is_canonical(c));
  REQUIRE(c.nnz() == ref.size());
  REQUIRE(c.dense_shape() == shape);
  std::size_t i = 0;
  for (const auto& [key, value] : ref) {
    for (std::size_t d = 0; d < rank; ++d) CHECK(c.indices()(i, d) == key[d]);
    CHECK(c.values().data<TestType>()[i] == Approx(value).margin(1e-5));
    ++i;
  }
}

TEST_CASE("coalesce_of_canonical_input_is_identity", "[coalesce]") {
  std::mt19937_64 rng(7);
  SparseTensor c = coalesce(random_coo<float>(rng, {5, 6}, 40));
  CHECK(coalesce(c) == c);
}

TEST_CASE("coalesce_keeps_explicit_zeros_and_index_dtype", "[coalesce]") {
  SparseTensor s(CooIndices{{3}, {1}, {3}}, DenseTensor(xt::xarray<float>{0.f, 2.f, 0.f}), {5});
  s.set_index_dtype(DType::I32);
  SparseTensor c = coalesce(s);
  CHECK(c.nnz() == 2);
  CHECK(c.indices()(1, 0) == 3);
  CHECK(c.values().data<float>()[1] == 0.f);
  CHECK(c.index_dtype() == DType::I32);
}

TEST_CASE("coalesce_handles_shapes_whose_element_count_overflows_64_bits", "[coalesce]") {
  const std::int64_t big = std::int64_t{1} << 40;
  SparseTensor s(CooIndices{{5, 1, 2}, {0, 9, 9}, {5, 1, 2}},
                 DenseTensor(xt::xarray<double>{1., 2., 3.}), {big, big, big});
  SparseTensor c = coalesce(s);
  REQUIRE(c.nnz() == 2);
  CHECK(c.indices()(0, 0) == 0);
  CHECK(c.values().data<double>()[1] == 4.);
  CHECK(is_canonical(c));
}

TEST_CASE("is_canonical_detects_unsorted_and_duplicate_indices", "[coalesce]") {
  auto f = [](std::initializer_list<float> v) { return DenseTensor(xt::xarray<float>(v)); };
  CHECK(is_canonical(SparseTensor(CooIndices{{0, 1}, {1, 0}}, f({1, 1}), {2, 2})));
  CHECK_FALSE(is_canonical(SparseTensor(CooIndices{{1, 0}, {0, 1}}, f({1, 1}), {2, 2})));
  CHECK_FALSE(is_canonical(SparseTensor(CooIndices{{1, 0}, {1, 0}}, f({1, 1}), {2, 2})));
  CHECK(is_canonical(
      RowSparseTensor(RowIndices{0, 2}, DenseTensor::zeros(DType::F32, {2, 3}), {3, 3})));
  CHECK_FALSE(is_canonical(
      RowSparseTensor(RowIndices{2, 2}, DenseTensor::zeros(DType::F32, {2, 3}), {3, 3})));
}

TEMPLATE_TEST_CASE("coalesce_row_sparse_matches_dense_reference", "[coalesce]", float, double) {
  std::mt19937_64 rng(GENERATE(11, 12, 13));
  const DenseShape shape{9, 4};
  RowSparseTensor r = random_row_sparse<TestType>(rng, shape, 20);

  RowSparseTensor c = coalesce(r);

  REQUIRE(is_canonical(c));
  DenseTensor expected = fedleaf::test::to_dense(r);
  DenseTensor got = fedleaf::test::to_dense(c);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(got.data<TestType>()[i] == Approx(expected.data<TestType>()[i]).margin(1e-5));
  }
  std::set<std::int64_t> distinct(r.indices().begin(), r.indices().end());
  CHECK(c.num_rows() == distinct.size());
}
