// Every rejection rule of SparseSumAccumulator::add, each leaving the accumulator unchanged.
#include <catch2/catch.hpp>
#include <limits>
#include <stdexcept>

#include "tests/core/aggregation/aggregation_test_util.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

core::SparseTensor coo(xt::xarray<float> values, core::CooIndices idx, core::DenseShape shape) {
  return core::SparseTensor(std::move(idx), core::DenseTensor(std::move(values)), std::move(shape));
}

// An accumulator of each operator holding two updates, in both representations.
std::vector<core::SparseSumAccumulator> populated_accumulators() {
  std::vector<core::SparseSumAccumulator> out;
  for (const core::OperatorSpec& spec : test::all_operator_specs()) {
    for (auto policy : {core::RepresentationPolicy::kSparse, core::RepresentationPolicy::kDense}) {
      core::SparseSumAccumulator acc("h", spec, UpdateEncoding::kCoo, DType::F32, {4, 5},
                                     {policy, 0});
      acc.add(coo({1.f, 2.f}, {{0, 1}, {3, 4}}, {4, 5}), 2.0);
      acc.add(coo({-1.f}, {{0, 1}}, {4, 5}), 5.0);
      out.push_back(std::move(acc));
    }
  }
  return out;
}

// Asserts add() and check() both reject `update` with `fragment` in the message, and that the
// accumulator's state (checkpoint bytes) and result are as before.
void require_rejected_unchanged(core::SparseSumAccumulator& acc, const core::Tensor& update,
                                double weight, const std::string& fragment) {
  const std::vector<std::uint8_t> before = acc.to_safetensors();
  const core::Tensor result = acc.finalize();
  const std::size_t bytes = acc.state_bytes();
  CHECK_THROWS_MATCHES(acc.check(update, weight), InvalidInput, MessageContains(fragment));
  CHECK_THROWS_MATCHES(acc.add(update, weight), InvalidInput, MessageContains(fragment));
  CHECK(acc.to_safetensors() == before);
  CHECK(acc.finalize() == result);
  CHECK(acc.state_bytes() == bytes);
  CHECK(acc.num_updates() == 2);
}

TEST_CASE("add_rejects_an_update_of_another_encoding_and_leaves_the_accumulator_unchanged") {
  for (auto& acc : populated_accumulators()) {
    require_rejected_unchanged(acc, core::DenseTensor::zeros(DType::F32, {4, 5}), 1.0,
                               "encoding 'dense' differs from the accumulator's 'coo'");
  }
}

TEST_CASE("add_rejects_a_dtype_mismatch_and_leaves_the_accumulator_unchanged") {
  for (auto& acc : populated_accumulators()) {
    const core::SparseTensor f64(core::CooIndices{{0, 0}},
                                 core::DenseTensor(xt::xarray<double>{1.0}), {4, 5});
    require_rejected_unchanged(acc, f64, 1.0, "dtype F64 differs from the accumulator's F32");
  }
}

TEST_CASE("add_rejects_a_different_dense_shape_and_leaves_the_accumulator_unchanged") {
  for (auto& acc : populated_accumulators()) {
    require_rejected_unchanged(acc, coo({1.f}, {{0, 1}}, {4, 6}), 1.0,
                               "dense_shape [4, 6] differs from the accumulator's [4, 5]");
    require_rejected_unchanged(acc, coo({1.f}, {{1}}, {20}), 1.0, "dense_shape [20] differs");
  }
}

TEST_CASE("indices_out_of_range_are_rejected_before_an_update_can_reach_the_accumulator") {
  // The tuple types enforce index ranges on construction (and from safetensors bytes, see
  // round_aggregator_test), so an out-of-range update cannot be formed.
  CHECK_THROWS_MATCHES(coo({1.f}, {{4, 0}}, {4, 5}), InvalidInput, MessageContains("out of range"));
  CHECK_THROWS_MATCHES(
      core::RowSparseTensor(
          core::RowIndices{7},
          core::DenseTensor(xt::xarray<float>(std::vector<std::size_t>{1, 1}, 1.f)), {7, 1}),
      InvalidInput, MessageContains("out of range"));
}

TEST_CASE("add_rejects_values_that_do_not_match_the_indices_and_leaves_the_accumulator_unchanged") {
  for (auto& acc : populated_accumulators()) {
    core::SparseTensor bad = coo({1.f, 2.f}, {{0, 1}, {1, 1}}, {4, 5});
    bad.values() = core::DenseTensor(xt::xarray<float>{1.f});
    require_rejected_unchanged(acc, bad, 1.0, "holds 1 values but its indices need 2");
  }
}

TEST_CASE("add_rejects_non_finite_values_and_leaves_the_accumulator_unchanged") {
  for (auto& acc : populated_accumulators()) {
    for (float v : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
      require_rejected_unchanged(acc, coo({0.5f, v}, {{1, 1}, {2, 2}}, {4, 5}), 1.0,
                                 "value 1 is not finite");
    }
  }
}

TEST_CASE(
    "add_rejects_a_weight_that_is_not_finite_and_positive_and_leaves_the_accumulator_unchanged") {
  for (auto& acc : populated_accumulators()) {
    for (double w : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
      require_rejected_unchanged(acc, coo({1.f}, {{1, 1}}, {4, 5}), w, "must be finite and > 0");
    }
  }
}

TEST_CASE("add_rejects_bad_dense_and_row_sparse_updates_and_leaves_the_accumulator_unchanged") {
  core::SparseSumAccumulator dense("out/w", {SparseSumOperator::kWeightedMean},
                                   UpdateEncoding::kDense, DType::F32, {2, 3});
  core::SparseSumAccumulator rows("emb", {SparseSumOperator::kMeanOverContributors},
                                  UpdateEncoding::kRowSparse, DType::F64, {10, 2});
  dense.add(core::DenseTensor(xt::xarray<float>{{1, 2, 3}, {4, 5, 6}}), 1.0);
  dense.add(core::DenseTensor(xt::xarray<float>{{1, 2, 3}, {4, 5, 6}}), 2.0);
  rows.add(core::RowSparseTensor(core::RowIndices{3}, core::DenseTensor(xt::xarray<double>{{1, 2}}),
                                 {10, 2}),
           1.0);
  rows.add(core::RowSparseTensor(core::RowIndices{3}, core::DenseTensor(xt::xarray<double>{{1, 2}}),
                                 {10, 2}),
           1.0);
  require_rejected_unchanged(dense, core::DenseTensor::zeros(DType::F32, {3, 2}), 1.0,
                             "dense_shape [3, 2] differs from the accumulator's [2, 3]");
  require_rejected_unchanged(dense,
                             core::DenseTensor(xt::xarray<float>{{1, 2, 3}, {4, 5, std::nanf("")}}),
                             1.0, "value 5 is not finite");
  require_rejected_unchanged(
      rows,
      core::RowSparseTensor(core::RowIndices{1}, core::DenseTensor(xt::xarray<double>{{1, 2, 3}}),
                            {10, 3}),
      1.0, "dense_shape [10, 3] differs");
  require_rejected_unchanged(
      rows,
      core::RowSparseTensor(core::RowIndices{1, 1},
                            core::DenseTensor(xt::xarray<double>{{1, 2}, {0, INFINITY}}), {10, 2}),
      1.0, "value 3 is not finite");
}

TEST_CASE("constructor_rejects_integer_dtypes_bad_shapes_and_clipping_without_a_norm") {
  CHECK_THROWS_MATCHES(core::SparseSumAccumulator("h", {SparseSumOperator::kSum},
                                                  UpdateEncoding::kCoo, DType::I64, {3}),
                       InvalidInput, MessageContains("dtype I64 is not F32 or F64"));
  CHECK_THROWS_MATCHES(core::SparseSumAccumulator("h", {SparseSumOperator::kSum},
                                                  UpdateEncoding::kRowSparse, DType::F32, {}),
                       InvalidInput, MessageContains("rank >= 1"));
  CHECK_THROWS_MATCHES(core::SparseSumAccumulator("h", {SparseSumOperator::kSum},
                                                  UpdateEncoding::kCoo, DType::F32, {3, -1}),
                       InvalidInput, MessageContains("negative dimension"));
  CHECK_THROWS_MATCHES(
      core::SparseSumAccumulator("h", {SparseSumOperator::kSum}, UpdateEncoding::kCoo, DType::F32,
                                 {std::int64_t{1} << 40, std::int64_t{1} << 40}),
      InvalidInput, MessageContains("2^63 or more elements"));
  CHECK_THROWS_MATCHES(
      core::SparseSumAccumulator("h", {SparseSumOperator::kClippedWeightedMean, 0.0},
                                 UpdateEncoding::kCoo, DType::F32, {3}),
      InvalidInput, MessageContains("clip_norm > 0"));
}

TEST_CASE("check_and_keep_then_add_kept_folds_as_add_and_rejects_as_add") {
  // Every operator, with its clip: two updates folded in two steps give add()'s state exactly.
  for (const core::OperatorSpec& spec : test::all_operator_specs()) {
    core::SparseSumAccumulator one_step("h", spec, UpdateEncoding::kCoo, DType::F32, {4, 5});
    core::SparseSumAccumulator two_steps = one_step;
    // Tensors (not SparseTensors): add_kept checks it is given the very object kept.
    const core::Tensor a = coo({1.f, 2.f}, {{0, 1}, {3, 4}}, {4, 5});
    const core::Tensor b = coo({-1.f, 4.f}, {{0, 2}, {1, 4}}, {4, 5});
    one_step.add(a, 2.0);
    one_step.add(b, 5.0);
    two_steps.check_and_keep(a, 2.0);
    two_steps.add_kept(a);
    two_steps.check_and_keep(b, 5.0);
    two_steps.add_kept(b);
    CHECK(two_steps.to_safetensors() == one_step.to_safetensors());
    CHECK(two_steps.finalize() == one_step.finalize());
  }
  // A rejected update leaves nothing kept and the accumulator unchanged.
  for (auto& acc : populated_accumulators()) {
    const std::vector<std::uint8_t> before = acc.to_safetensors();
    const core::Tensor dense = core::DenseTensor::zeros(DType::F32, {4, 5});
    CHECK_THROWS_MATCHES(acc.check_and_keep(dense, 1.0), InvalidInput,
                         MessageContains("encoding 'dense' differs"));
    CHECK_THROWS_AS(acc.add_kept(dense), std::logic_error);
    CHECK(acc.to_safetensors() == before);
  }
}

TEST_CASE("add_kept_refuses_a_tensor_not_kept_and_a_kept_update_twice") {
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kSum}, UpdateEncoding::kCoo, DType::F32,
                                 {4, 5});
  const core::Tensor a = coo({1.f}, {{0, 1}}, {4, 5});
  const core::Tensor other = coo({1.f}, {{0, 1}}, {4, 5});
  CHECK_THROWS_AS(acc.add_kept(a), std::logic_error);  // nothing kept yet
  acc.check_and_keep(a, 1.0);
  CHECK_THROWS_AS(acc.add_kept(other), std::logic_error);  // equal, but not the tensor kept
  acc.check_and_keep(a, 1.0);
  acc.add_kept(a);
  CHECK(acc.num_updates() == 1);
  CHECK_THROWS_AS(acc.add_kept(a), std::logic_error);  // folded once only
  acc.check_and_keep(a, 1.0);
  acc.add(a, 1.0);  // add() drops what was kept
  CHECK_THROWS_AS(acc.add_kept(a), std::logic_error);
  CHECK(acc.num_updates() == 2);
}

}  // namespace
}  // namespace fedleaf
