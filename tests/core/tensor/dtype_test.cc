#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/tensor/dense_tensor.h"
#include "core/tensor/dtype.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

TEST_CASE("dtype_names_round_trip_through_parse", "[dtype]") {
  for (DType d : {DType::F32, DType::F64, DType::I32, DType::I64, DType::U8, DType::F16,
                  DType::BF16, DType::I8, DType::U32}) {
    CHECK(parse_dtype(dtype_name(d)) == d);
  }
  CHECK(dtype_size(DType::F32) == 4);
  CHECK(dtype_size(DType::F64) == 8);
  CHECK(dtype_size(DType::I32) == 4);
  CHECK(dtype_size(DType::I64) == 8);
  CHECK(dtype_size(DType::U8) == 1);
  CHECK(dtype_size(DType::F16) == 2);
  CHECK(dtype_size(DType::BF16) == 2);
  CHECK(dtype_size(DType::I8) == 1);
  CHECK(dtype_size(DType::U32) == 4);
  CHECK(dtype_name(DType::U32) == "U32");
}

TEST_CASE("parse_dtype_rejects_unknown_names_naming_the_field", "[dtype]") {
  CHECK_THROWS_MATCHES(parse_dtype("F8_E4M3", "tensor 'w'"), fedleaf::InvalidInput,
                       MessageContains("tensor 'w': unknown dtype 'F8_E4M3'"));
  CHECK_THROWS_AS(parse_dtype("f32"), fedleaf::InvalidInput);
}

TEST_CASE("dtype_predicates_classify_float_and_index_types", "[dtype]") {
  CHECK(is_floating(DType::F32));
  CHECK(is_floating(DType::F64));
  CHECK_FALSE(is_floating(DType::I64));
  CHECK_FALSE(is_floating(DType::F16));
  CHECK(is_half_float(DType::F16));
  CHECK(is_half_float(DType::BF16));
  CHECK_FALSE(is_half_float(DType::F32));
  CHECK_FALSE(is_half_float(DType::I8));
  CHECK(is_storage_only(DType::I8));
  CHECK(is_storage_only(DType::BF16));
  CHECK(is_storage_only(DType::U32));  // widened to I64 when a tuple's ids are read
  CHECK_FALSE(is_index_dtype(DType::U32));
  CHECK_FALSE(is_storage_only(DType::U8));
  CHECK(is_index_dtype(DType::I32));
  CHECK(is_index_dtype(DType::I64));
  CHECK_FALSE(is_index_dtype(DType::U8));
  CHECK(dtype_of<std::uint8_t>() == DType::U8);
}

TEST_CASE("require_index_dtype_returns_i32_or_i64_and_rejects_others_naming_them", "[dtype]") {
  CHECK(require_index_dtype(DType::I32) == DType::I32);
  CHECK(require_index_dtype(DType::I64, "ids") == DType::I64);
  CHECK_THROWS_MATCHES(require_index_dtype(DType::F32, "plan.ids"), fedleaf::InvalidInput,
                       MessageContains("plan.ids must be I32 or I64, got F32"));
}

TEST_CASE("visit_dtype_calls_with_the_matching_cpp_type", "[dtype]") {
  CHECK(visit_dtype(DType::F64, [](auto tag) { return sizeof(tag); }) == 8);
  CHECK(visit_dtype(DType::U8, [](auto tag) { return sizeof(tag); }) == 1);
}

TEST_CASE("visit_dtype_rejects_the_storage_dtypes_no_tensor_holds", "[dtype]") {
  CHECK_THROWS_MATCHES(visit_dtype(DType::BF16, [](auto tag) { return sizeof(tag); }),
                       fedleaf::InvalidInput, MessageContains("dtype BF16 is a storage dtype"));
  CHECK_THROWS_MATCHES(DenseTensor::zeros(DType::F16, {2}), fedleaf::InvalidInput,
                       MessageContains("dtype F16 is a storage dtype"));
  CHECK_THROWS_MATCHES(DenseTensor::zeros(DType::I8, {2}), fedleaf::InvalidInput,
                       MessageContains("dtype I8 is a storage dtype"));
}
