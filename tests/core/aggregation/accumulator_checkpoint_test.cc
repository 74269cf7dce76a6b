#include <catch2/catch.hpp>

#include "core/wire/safetensors.h"
#include "tests/core/aggregation/aggregation_test_util.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

TEST_CASE("accumulator_checkpoint_round_trips_every_operator_encoding_and_representation") {
  std::mt19937_64 rng(909);
  for (const auto& [spec, encoding] : test::every_spec_and_encoding()) {
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

// Loading sample_checkpoint() after `damage` changed it fails, naming `fragment`.
template <class Damage>
void require_load_rejects(Damage damage, const std::string& fragment) {
  core::SafetensorsFile f = sample_checkpoint();
  damage(f);
  CHECK_THROWS_MATCHES(core::SparseSumAccumulator::load("h", f.tensors, f.metadata), InvalidInput,
                       MessageContains(fragment));
}

// A damage that sets element i of the checkpoint's array `name` (of T) to `value`.
template <class T>
auto set_element(const char* name, std::size_t i, T value) {
  return [=](core::SafetensorsFile& f) {
    std::get<core::DenseTensor>(f.tensors.at(name)).data<T>()[i] = value;
  };
}

TEST_CASE("accumulator_load_rejects_missing_or_malformed_metadata") {
  require_load_rejects([](core::SafetensorsFile& f) { f.metadata.erase("h@operator"); },
                       "metadata 'h@operator' is missing");
  struct BadValue {
    const char* key;
    const char* value;
    const char* fragment;
  };
  for (const BadValue& bad :
       {BadValue{"h@operator", "median", "unknown aggregator 'median'"},
        BadValue{"h@num_updates", "-1", "num_updates '-1' is not a non-negative integer"},
        BadValue{"h@total_weight", "0", "inconsistent with num_updates 1"},
        BadValue{"h@dense_shape", "10,x", "dense_shape dimension 'x'"}}) {
    require_load_rejects([&](core::SafetensorsFile& f) { f.metadata[bad.key] = bad.value; },
                         bad.fragment);
  }
}

TEST_CASE("accumulator_load_rejects_unsorted_out_of_range_or_impossible_arrays") {
  require_load_rejects(set_element<std::int64_t>("h@keys", 1, 2),
                       "keys are not sorted and unique at entry 1");
  require_load_rejects(set_element<std::int64_t>("h@keys", 1, 10),
                       "key 10 is out of range [0, 10)");
  require_load_rejects(set_element("h@contributors", 0, 0.0),
                       "contributor weight 0 of key 2 is impossible");
  require_load_rejects(set_element("h@sums", 0, double{NAN}), "sums value 0 is not finite");
  require_load_rejects([](core::SafetensorsFile& f) { f.tensors.erase("h@sums"); },
                       "tensor 'h@sums' is missing");
  require_load_rejects(
      [](core::SafetensorsFile& f) {
        f.tensors.insert_or_assign("h@sums", core::DenseTensor::zeros(DType::F32, {2, 1}));
      },
      "must be a dense F64 array of shape [2, 1]");
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
