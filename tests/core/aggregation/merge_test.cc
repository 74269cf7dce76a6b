#include <catch2/catch.hpp>

#include "tests/core/aggregation/aggregation_test_util.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

TEST_CASE("merge_of_random_groups_in_random_order_matches_the_dense_reference") {
  std::mt19937_64 rng(707);
  for (const auto& [spec, encoding] : test::every_spec_and_encoding()) {
    for (auto dtype : {DType::F32, DType::F64}) {
      for (int trial = 0; trial < 4; ++trial) {
        const test::Scenario s = test::random_scenario(rng, encoding, dtype, 20);
        const std::size_t groups = std::uniform_int_distribution<std::size_t>(1, 6)(rng);
        std::vector<core::SparseSumAccumulator> parts;
        for (std::size_t g = 0; g < groups; ++g) {
          const auto policy =
              static_cast<RepresentationPolicy>(std::uniform_int_distribution<int>(0, 2)(rng));
          parts.emplace_back("t", spec, encoding, dtype, s.dense_shape,
                             core::AccumulatorOptions{policy, 0});
        }
        double total = 0.0;
        for (const test::ClientUpdate& c : s.clients) {
          parts[std::uniform_int_distribution<std::size_t>(0, groups - 1)(rng)].add(c.tensor,
                                                                                    c.weight);
          total += c.weight;
        }
        while (parts.size() > 1) {
          const std::size_t i =
              std::uniform_int_distribution<std::size_t>(0, parts.size() - 1)(rng);
          std::size_t j = std::uniform_int_distribution<std::size_t>(0, parts.size() - 2)(rng);
          if (j >= i) ++j;
          parts[i].merge(parts[j]);
          parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(j));
        }
        INFO("operator " << core::operator_name(spec.op) << ", encoding "
                         << core::update_encoding_name(encoding) << ", trial " << trial);
        test::check_against_reference(parts[0].finalize(), s, spec);
        CHECK(parts[0].num_updates() == s.clients.size());
        CHECK(parts[0].total_weight() == Approx(total).epsilon(1e-15));
      }
    }
  }
}

TEST_CASE("merge_with_an_empty_accumulator_changes_no_result") {
  std::mt19937_64 rng(708);
  const test::Scenario s = test::random_scenario(rng, UpdateEncoding::kCoo, DType::F32, 5);
  const core::OperatorSpec spec{SparseSumOperator::kMeanOverContributors, 0.0};
  core::SparseSumAccumulator acc = test::accumulate(s, spec);
  const core::Tensor before = acc.finalize();
  acc.merge(core::SparseSumAccumulator("t", spec, s.encoding, s.dtype, s.dense_shape));
  CHECK(acc.finalize() == before);
  CHECK(acc.num_updates() == 5);
}

TEST_CASE("merge_with_itself_counts_every_update_twice") {
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kSum}, UpdateEncoding::kCoo, DType::F64,
                                 {5});
  acc.add(
      core::SparseTensor(core::CooIndices{{3}}, core::DenseTensor(xt::xarray<double>{1.5}), {5}),
      1.0);
  acc.merge(acc);
  CHECK(std::get<core::SparseTensor>(acc.finalize()).values() ==
        core::DenseTensor(xt::xarray<double>{3.0}));
  CHECK(acc.num_updates() == 2);
}

TEST_CASE("merge_rejects_a_different_operator_encoding_dtype_or_shape_and_changes_nothing") {
  const core::OperatorSpec spec{SparseSumOperator::kWeightedMean, 0.0};
  core::SparseSumAccumulator acc("h", spec, UpdateEncoding::kCoo, DType::F32, {8});
  acc.add(core::SparseTensor(core::CooIndices{{3}}, core::DenseTensor(xt::xarray<float>{1.f}), {8}),
          2.0);
  const auto before = acc.to_safetensors();
  CHECK_THROWS_MATCHES(acc.merge(core::SparseSumAccumulator("h", {SparseSumOperator::kSum},
                                                            UpdateEncoding::kCoo, DType::F32, {8})),
                       InvalidInput, MessageContains("operator sum"));
  CHECK_THROWS_MATCHES(
      acc.merge(core::SparseSumAccumulator("h", spec, UpdateEncoding::kRowSparse, DType::F32, {8})),
      InvalidInput, MessageContains("encoding 'row_sparse'"));
  CHECK_THROWS_MATCHES(
      acc.merge(core::SparseSumAccumulator("h", spec, UpdateEncoding::kCoo, DType::F64, {8})),
      InvalidInput, MessageContains("dtype F64"));
  CHECK_THROWS_MATCHES(
      acc.merge(core::SparseSumAccumulator("h", spec, UpdateEncoding::kCoo, DType::F32, {9})),
      InvalidInput, MessageContains("dense_shape [9]"));
  CHECK(acc.to_safetensors() == before);
}

}  // namespace
}  // namespace fedleaf
