#include <catch2/catch.hpp>

#include <limits>

#include "core/tensor/dense_tensor.h"

using namespace fedleaf::core;

TEST_CASE("zeros_has_requested_dtype_shape_and_zero_bytes", "[dense]") {
  DenseTensor t = DenseTensor::zeros(DType::I64, {2, 3});
  CHECK(t.dtype() == DType::I64);
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.size() == 6);
  CHECK(t.nbytes() == 48);
  for (std::size_t i = 0; i < 6; ++i) CHECK(t.data<std::int64_t>()[i] == 0);
}

TEST_CASE("typed_access_with_the_wrong_dtype_throws", "[dense]") {
  DenseTensor t = DenseTensor::zeros(DType::F32, {4});
  CHECK_THROWS_WITH(t.array<double>(), Catch::Matchers::Contains("expected F64"));
}

TEST_CASE("from_bytes_copies_and_checks_the_byte_count", "[dense]") {
  const float src[3] = {1.f, 2.f, 3.f};
  DenseTensor t =
      DenseTensor::from_bytes(DType::F32, {3}, reinterpret_cast<const std::uint8_t*>(src), 12);
  CHECK(t.array<float>()(2) == 3.f);
  CHECK_THROWS_WITH(
      DenseTensor::from_bytes(DType::F32, {4}, reinterpret_cast<const std::uint8_t*>(src), 12, "w"),
      Catch::Matchers::Contains("w: 12 bytes do not match shape [4] of F32"));
}

TEST_CASE("equality_compares_dtype_shape_and_bytes", "[dense]") {
  DenseTensor a(xt::xarray<float>{{1.f, 2.f}, {3.f, 4.f}});
  DenseTensor b(xt::xarray<float>{{1.f, 2.f}, {3.f, 4.f}});
  DenseTensor c(xt::xarray<float>{1.f, 2.f, 3.f, 4.f});
  DenseTensor d(xt::xarray<double>{{1., 2.}, {3., 4.}});
  CHECK(a == b);
  CHECK(a != c);
  CHECK(a != d);
  b.array<float>()(1, 1) = 5.f;
  CHECK(a != b);
}

TEST_CASE("shape_element_count_rejects_overflow", "[dense]") {
  CHECK(shape_element_count({2, 3, 4}, "t") == 24);
  CHECK(shape_element_count({}, "t") == 1);
  const std::size_t half = std::numeric_limits<std::size_t>::max() / 2;
  CHECK_THROWS_AS(shape_element_count({half, 3}, "t"), fedleaf::InvalidInput);
}
