#include <catch2/catch.hpp>

#include "core/safetensors.h"
#include "tests/core/aggregation/aggregation_test_util.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

TEST_CASE("accumulator_checkpoint_round_trips_every_operator_encoding_and_representation") {
  std::mt19937_64 rng(909);
  for (const core::OperatorSpec& spec : test::all_operator_specs()) {
    for (auto encoding :
         {UpdateEncoding::kDense, UpdateEncoding::kCoo, UpdateEncoding::kRowSparse}) {
      const test::Scenario s = test::random_scenario(rng, encoding, DType::F32, 12);
      test::Scenario first = s, second = s;
      first.clients.resize(6);
      second.clients.erase(second.clients.begin(), second.clients.begin() + 6);
      for (auto policy : {RepresentationPolicy::kSparse, RepresentationPolicy::kDense}) {
        const core::SparseSumAccumulator half = test::accumulate(first, spec, {policy, 0});
        const std::vector<std::uint8_t> bytes = half.to_safetensors();
        core::SparseSumAccumulator resumed =
            core::SparseSumAccumulator::from_safetensors(bytes.data(), bytes.size());
        CHECK(resumed.num_updates() == half.num_updates());
        CHECK(resumed.total_weight() == half.total_weight());
        CHECK(resumed.finalize() == half.finalize());
        CHECK(resumed.to_safetensors() == bytes);
        // Resuming and adding the rest equals the uninterrupted run, bit for bit.
        for (const test::ClientUpdate& c : second.clients) resumed.add(c.tensor, c.weight);
        CHECK(resumed.finalize() == test::accumulate(s, spec, {policy, 0}).finalize());
      }
    }
  }
}

// A checkpoint of a small coo mean_over_contributors accumulator, as tensors and metadata.
core::SafetensorsFile sample_checkpoint() {
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kMeanOverContributors},
                                 UpdateEncoding::kCoo, DType::F32, {10});
  acc.add(core::SparseTensor(core::CooIndices{{2}, {5}},
                             core::DenseTensor(xt::xarray<float>{1.f, 2.f}), {10}),
          3.0);
  const auto bytes = acc.to_safetensors();
  return core::read_safetensors(bytes);
}

void require_load_rejects(const core::SafetensorsFile& f, const std::string& fragment) {
  CHECK_THROWS_MATCHES(core::SparseSumAccumulator::load("h", f.tensors, f.metadata), InvalidInput,
                       MessageContains(fragment));
}

TEST_CASE("accumulator_load_rejects_missing_or_malformed_metadata") {
  auto f = sample_checkpoint();
  f.metadata.erase("h@operator");
  require_load_rejects(f, "metadata 'h@operator' is missing");
  f = sample_checkpoint();
  f.metadata["h@operator"] = "median";
  require_load_rejects(f, "unknown aggregator 'median'");
  f = sample_checkpoint();
  f.metadata["h@num_updates"] = "-1";
  require_load_rejects(f, "num_updates '-1' is not a non-negative integer");
  f = sample_checkpoint();
  f.metadata["h@total_weight"] = "0";
  require_load_rejects(f, "inconsistent with num_updates 1");
  f = sample_checkpoint();
  f.metadata["h@dense_shape"] = "10,x";
  require_load_rejects(f, "dense_shape dimension 'x'");
}

TEST_CASE("accumulator_load_rejects_unsorted_out_of_range_or_impossible_arrays") {
  auto f = sample_checkpoint();
  std::get<core::DenseTensor>(f.tensors.at("h@keys")).data<std::int64_t>()[1] = 2;
  require_load_rejects(f, "keys are not sorted and unique at entry 1");
  f = sample_checkpoint();
  std::get<core::DenseTensor>(f.tensors.at("h@keys")).data<std::int64_t>()[1] = 10;
  require_load_rejects(f, "key 10 is out of range [0, 10)");
  f = sample_checkpoint();
  std::get<core::DenseTensor>(f.tensors.at("h@contributors")).data<double>()[0] = 0.0;
  require_load_rejects(f, "contributor weight 0 of key 2 is impossible");
  f = sample_checkpoint();
  std::get<core::DenseTensor>(f.tensors.at("h@sums")).data<double>()[0] = NAN;
  require_load_rejects(f, "sums value 0 is not finite");
  f = sample_checkpoint();
  f.tensors.erase("h@sums");
  require_load_rejects(f, "tensor 'h@sums' is missing");
  f = sample_checkpoint();
  f.tensors.insert_or_assign("h@sums", core::DenseTensor::zeros(DType::F32, {2, 1}));
  require_load_rejects(f, "must be a dense F64 array of shape [2, 1]");
}

TEST_CASE("accumulator_from_safetensors_rejects_foreign_tensors_and_missing_name") {
  core::NamedTensors tensors;
  tensors.emplace("w", core::DenseTensor::zeros(DType::F32, {2}));
  const auto no_name = core::write_safetensors(tensors, {});
  CHECK_THROWS_MATCHES(core::SparseSumAccumulator::from_safetensors(no_name.data(), no_name.size()),
                       InvalidInput, MessageContains("metadata 'accumulator'"));
  const auto foreign = core::write_safetensors(tensors, {{"accumulator", "h"}});
  CHECK_THROWS_MATCHES(core::SparseSumAccumulator::from_safetensors(foreign.data(), foreign.size()),
                       InvalidInput, MessageContains("unexpected tensor 'w'"));
}

}  // namespace
}  // namespace fedleaf
