#include <catch2/catch.hpp>

#include "tests/core/to_dense.h"

using namespace fedleaf::core;

TEST_CASE("to_dense_places_and_sums_coo_values", "[to_dense]") {
  SparseTensor s(CooIndices{{0, 1}, {1, 2}, {0, 1}}, DenseTensor(xt::xarray<float>{1.f, 2.f, 3.f}),
                 {2, 3});
  DenseTensor d = fedleaf::test::to_dense(s);
  CHECK(d.shape() == Shape{2, 3});
  CHECK((d.array<float>() == xt::xarray<float>{{0.f, 4.f, 0.f}, {0.f, 0.f, 2.f}}));
}

TEST_CASE("to_dense_places_whole_rows", "[to_dense]") {
  RowSparseTensor r(RowIndices{2, 0}, DenseTensor(xt::xarray<double>{{1., 2.}, {3., 4.}}), {3, 2});
  CHECK((fedleaf::test::to_dense(r).array<double>() ==
         xt::xarray<double>{{3., 4.}, {0., 0.}, {1., 2.}}));
}

TEST_CASE("to_dense_refuses_huge_shapes", "[to_dense]") {
  RowSparseTensor r(RowIndices{}, DenseTensor::zeros(DType::F32, {0, 32}),
                    {std::int64_t{1} << 25, 32});
  CHECK_THROWS_WITH(fedleaf::test::to_dense(r),
                    Catch::Matchers::Contains("too large to materialize"));
}
