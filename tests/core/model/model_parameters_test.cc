#include <catch2/catch.hpp>

#include "core/model/model_parameters.h"
#include "core/train/plan.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

const char* kPlan = R"({"model": {"inputs": {"tokens": "sparse_ids"},
  "layers": [{"type": "embedding_bag", "name": "emb", "vocab": 10, "dim": 2},
             {"type": "dense", "name": "out", "units": 2}],
  "loss": "softmax_cross_entropy"}, "kind": "evaluate"})";

NamedTensors complete_model() {
  NamedTensors t;
  t.emplace("emb/weight", DenseTensor::zeros(DType::F32, {10, 2}));
  t.emplace("out/weight", DenseTensor::zeros(DType::F32, {2, 2}));
  t.emplace("out/bias", DenseTensor::zeros(DType::F32, {2}));
  return t;
}

}  // namespace

TEST_CASE("declared_parameters_takes_every_declared_tensor_and_ignores_others", "[parameters]") {
  NamedTensors model = complete_model();
  model.emplace("unrelated", DenseTensor::zeros(DType::F32, {3}));

  const Parameters params = declared_parameters(parse_plan(kPlan).model, std::move(model));

  REQUIRE(params.size() == 3);
  CHECK(params.at("emb/weight").shape() == Shape{10, 2});
  CHECK(params.count("unrelated") == 0);
}

TEST_CASE("declared_parameters_rejects_missing_sparse_and_misshapen_tensors", "[parameters]") {
  const ModelSpec spec = parse_plan(kPlan).model;
  NamedTensors missing = complete_model();
  missing.erase("out/bias");
  NamedTensors sparse = complete_model();
  sparse.erase("out/weight");
  sparse.emplace("out/weight",
                 SparseTensor(CooIndices{{0, 1}}, DenseTensor(xt::xarray<float>{1.f}), {2, 2}));
  NamedTensors misshapen = complete_model();
  misshapen.at("emb/weight") = DenseTensor::zeros(DType::F32, {9, 2});

  CHECK_THROWS_MATCHES(declared_parameters(spec, missing), fedleaf::InvalidInput,
                       MessageContains("model: missing tensor 'out/bias' declared by "
                                       "plan.model.layers[1]"));
  CHECK_THROWS_MATCHES(
      declared_parameters(spec, sparse), fedleaf::InvalidInput,
      MessageContains("model tensor 'out/weight': expected a dense tensor, got coo"));
  CHECK_THROWS_MATCHES(
      declared_parameters(spec, misshapen), fedleaf::InvalidInput,
      MessageContains("model tensor 'emb/weight': shape [9, 2] differs from [10, 2]"));
}
