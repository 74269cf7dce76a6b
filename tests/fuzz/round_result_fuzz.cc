// A leaf's train upload, as RoundAggregator::add_result takes it: any bytes either fold in or
// raise fedleaf::InvalidInput leaving the round unchanged (same checkpoint bytes), and the next
// model stays finite whatever was folded. Plan and model are fixed (the server's test plan shape:
// a row-sparse embedding under mean_over_contributors, a dense layer under weighted_mean, a coo
// tensor under sum with the default robust clip).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <variant>
#include <vector>

#include "core/aggregation/round/round_aggregator.h"
#include "core/aggregation/updates/update_plan.h"
#include "core/error.h"

namespace {

using namespace fedleaf::core;

const char* kPlan = R"({"updates": {
  "emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
  "out/weight": {"encoding": "dense", "aggregator": "weighted_mean", "clip": "off"},
  "h/weight": {"encoding": "coo", "aggregator": "sum"}}})";

NamedTensors model() {
  NamedTensors m;
  m.emplace("emb/weight", DenseTensor::zeros(DType::F32, {10, 2}));
  m.emplace("out/weight", DenseTensor::zeros(DType::F32, {3, 2}));
  m.emplace("h/weight", DenseTensor::zeros(DType::F32, {4, 3}));
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const UpdatePlan plan = parse_update_plan(std::string(kPlan));
  RoundAggregator round(plan, model(), 2);
  const std::vector<std::uint8_t> before = round.checkpoint();
  try {
    round.add_result(data, size);
  } catch (const fedleaf::InvalidInput&) {
    if (round.checkpoint() != before) std::abort();  // a rejection changes nothing
    return 0;
  }
  round.add_result(data, size);  // the same report again (a second leaf): still fine
  for (const auto& [name, tensor] : round.next_model()) {
    const auto& dense = std::get<DenseTensor>(tensor);
    const float* v = dense.data<float>();
    for (std::size_t i = 0; i < dense.size(); ++i) {
      if (!std::isfinite(v[i])) std::abort();
    }
  }
  return 0;
}
