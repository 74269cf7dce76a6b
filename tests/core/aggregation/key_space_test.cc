// Key spaces wider than 32 bits, and arrays larger than this platform's size_t can address: a
// sparse accumulator keeps 64-bit keys exactly on every platform (wasm32 included); whatever
// would need a dense array too large to address is rejected with InvalidInput, never truncated.
#include <catch2/catch.hpp>

#include "tests/core/aggregation/aggregation_test_util.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

constexpr std::int64_t k2To20 = std::int64_t{1} << 20;
constexpr std::int64_t k2To62 = std::int64_t{1} << 62;

TEST_CASE("coo_keys_beyond_32_bits_are_kept_exactly_and_survive_a_checkpoint") {
  const core::DenseShape shape{k2To20, k2To20};  // 2^40 keys
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kMeanOverContributors},
                                 UpdateEncoding::kCoo, DType::F64, shape,
                                 {RepresentationPolicy::kAuto, 6});
  core::CooIndices first = {{k2To20 - 1, k2To20 - 1}, {0, 5}, {4096, 3}};
  core::CooIndices second = {{4096, 3}, {k2To20 - 1, k2To20 - 1}};
  acc.add(core::SparseTensor(first, core::DenseTensor(xt::xarray<double>{1.0, 2.0, 3.0}), shape),
          1.0);
  acc.add(core::SparseTensor(second, core::DenseTensor(xt::xarray<double>{5.0, 7.0}), shape), 3.0);
  CHECK(acc.representation() == Representation::kSparse);
  const core::Tensor result = acc.finalize();
  const auto& sparse = std::get<core::SparseTensor>(result);
  const core::CooIndices expected_indices = {{0, 5}, {4096, 3}, {k2To20 - 1, k2To20 - 1}};
  CHECK(sparse.indices() == expected_indices);
  // mean over contributors: (1·3 + 3·5) / 4 and (1·1 + 3·7) / 4.
  CHECK(sparse.values() == core::DenseTensor(xt::xarray<double>{2.0, 4.5, 5.5}));
  const std::vector<std::uint8_t> saved = acc.to_safetensors();
  CHECK(core::SparseSumAccumulator::from_safetensors(saved.data(), saved.size()).finalize() ==
        result);
}

TEST_CASE("row_sparse_rows_beyond_32_bits_are_kept_exactly") {
  const std::int64_t rows = std::int64_t{1} << 34;
  core::SparseSumAccumulator acc("e", {SparseSumOperator::kSum}, UpdateEncoding::kRowSparse,
                                 DType::F32, {rows, 2});
  acc.add(core::RowSparseTensor(core::RowIndices{rows - 1, (std::int64_t{1} << 32) + 1},
                                core::DenseTensor(xt::xarray<float>{{1.f, 2.f}, {3.f, 4.f}}),
                                {rows, 2}),
          1.0);
  const auto result = std::get<core::RowSparseTensor>(acc.finalize());
  CHECK(result.indices() == core::RowIndices{(std::int64_t{1} << 32) + 1, rows - 1});
  CHECK(result.values() == core::DenseTensor(xt::xarray<float>{{3.f, 4.f}, {1.f, 2.f}}));
}

TEST_CASE("dense_arrays_beyond_size_t_are_rejected_with_invalid_input") {
  const core::OperatorSpec spec{SparseSumOperator::kWeightedMean, 0.0};
  // 2^62 f64 sums are 2^65 bytes: beyond size_t on 64-bit platforms, and on wasm32 all the more.
  CHECK_THROWS_MATCHES(
      core::SparseSumAccumulator("w", spec, UpdateEncoding::kDense, DType::F32, {k2To62}),
      InvalidInput, MessageContains("more elements than a dense f64 array can hold"));
  CHECK_THROWS_MATCHES(core::SparseSumAccumulator("h", spec, UpdateEncoding::kCoo, DType::F32,
                                                  {k2To62}, {RepresentationPolicy::kDense, 0}),
                       InvalidInput, MessageContains("more elements than a dense f64 array"));
  CHECK_THROWS_MATCHES(core::SparseSumAccumulator("e", spec, UpdateEncoding::kRowSparse, DType::F32,
                                                  {2, std::int64_t{1} << 61}),
                       InvalidInput, MessageContains("has rows of 2305843009213693952 elements"));
}

TEST_CASE("auto_accumulator_over_an_unaddressable_key_space_stays_sparse_even_when_hinted") {
  // The hint projects ~2^62 touched keys, which no platform could hold: it is not acted upon,
  // and the accumulator neither switches to dense nor reserves for it.
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kWeightedMean}, UpdateEncoding::kCoo,
                                 DType::F32, {k2To62},
                                 {RepresentationPolicy::kAuto, std::uint64_t{1} << 62});
  CHECK(acc.representation() == Representation::kSparse);
  CHECK(acc.state_bytes() == 0);
  core::CooIndices idx = {{k2To62 - 1}, {7}};
  acc.add(core::SparseTensor(idx, core::DenseTensor(xt::xarray<float>{2.f, 4.f}), {k2To62}), 2.0);
  CHECK(acc.representation() == Representation::kSparse);
  const auto result = std::get<core::SparseTensor>(acc.finalize());
  CHECK(result.indices() == core::CooIndices{{7}, {k2To62 - 1}});
  CHECK(result.values() == core::DenseTensor(xt::xarray<float>{4.f, 2.f}));
}

}  // namespace
}  // namespace fedleaf
