#include "core/aggregation/round/apply_update.h"

#include <utility>

#include "core/aggregation/round/round_aggregator.h"

namespace fedleaf::core {

UpdatePlan without_robust_rules(UpdatePlan plan) {
  for (TensorUpdatePlan& tensor : plan.tensors) {
    if (tensor.op.op == SparseSumOperator::kClippedWeightedMean) {
      tensor.op.op = SparseSumOperator::kWeightedMean;
      tensor.op.clip_norm = 0.0;
    }
    tensor.op.clip = UpdateClip{};
    tensor.adaptive_clip.reset();
    tensor.op.row_clip = 0.0;
    tensor.op.min_contributors = 0;
  }
  plan.max_examples_per_report = 0;
  plan.adaptive_example_cap.reset();
  return plan;
}

NamedTensors apply_update(const UpdatePlan& plan, NamedTensors model, const std::uint8_t* result,
                          std::size_t size) {
  RoundAggregator round(without_robust_rules(plan), std::move(model), /*expected_reports=*/1);
  round.add_result(result, size);
  return round.next_model();
}

}  // namespace fedleaf::core
