#include <catch2/catch.hpp>

#include "core/dtype.h"
#include "core/error.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

TEST_CASE("dtype_names_round_trip_through_parse", "[dtype]") {
  for (DType d : {DType::F32, DType::F64, DType::I32, DType::I64, DType::U8}) {
    CHECK(parse_dtype(dtype_name(d)) == d);
  }
  CHECK(dtype_size(DType::F32) == 4);
  CHECK(dtype_size(DType::F64) == 8);
  CHECK(dtype_size(DType::I32) == 4);
  CHECK(dtype_size(DType::I64) == 8);
  CHECK(dtype_size(DType::U8) == 1);
}

TEST_CASE("parse_dtype_rejects_unknown_names_naming_the_field", "[dtype]") {
  CHECK_THROWS_MATCHES(parse_dtype("BF16", "tensor 'w'"), fedleaf::InvalidInput,
                       MessageContains("tensor 'w': unknown dtype 'BF16'"));
  CHECK_THROWS_AS(parse_dtype("f32"), fedleaf::InvalidInput);
}

TEST_CASE("dtype_predicates_classify_float_and_index_types", "[dtype]") {
  CHECK(is_floating(DType::F32));
  CHECK(is_floating(DType::F64));
  CHECK_FALSE(is_floating(DType::I64));
  CHECK(is_index_dtype(DType::I32));
  CHECK(is_index_dtype(DType::I64));
  CHECK_FALSE(is_index_dtype(DType::U8));
  CHECK(dtype_of<std::uint8_t>() == DType::U8);
}

TEST_CASE("visit_dtype_calls_with_the_matching_cpp_type", "[dtype]") {
  CHECK(visit_dtype(DType::F64, [](auto tag) { return sizeof(tag); }) == 8);
  CHECK(visit_dtype(DType::U8, [](auto tag) { return sizeof(tag); }) == 1);
}
