// One train result applied to a model without the federated robust rules: local fine-tuning,
// where the data's owner trains the model and wants the trained model back, not what a round
// would publish of one untrusted report.
//
//   const UpdatePlan plan = parse_update_plan(plan_json);
//   NamedTensors trained = apply_update(plan, read_safetensors(model).tensors,
//                                       result.data(), result.size());
//
// The robust rules (update_plan.h) defend a round against other clients: the clip (a fixed or
// adaptive bound starting at rms 0.01), the row clip, min_contributors (2 by default, so a round
// of one report leaves every embedding row unchanged) and the example cap. Here the one report is
// the owner's own, so all of them are off, and clipped_weighted_mean folds as weighted_mean. The
// fold is still a RoundAggregator's: the result is what a round of this one report publishes
// with those rules off: model + the update for sum, weighted_mean, mean_over_contributors and
// clipped_weighted_mean. Tensors the plan's updates do not name are kept. The result is checked as
// RoundAggregator::add_result checks a report (InvalidInput naming the tensor and the rule); an
// element whose new value would not be finite keeps its old value, as in
// RoundAggregator::next_model.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/aggregation/updates/update_plan.h"
#include "core/tensor/tensor.h"

namespace fedleaf::core {

// `plan` with the clip, row clip, min_contributors and example cap off, and clipped_weighted_mean
// as weighted_mean.
UpdatePlan without_robust_rules(UpdatePlan plan);

NamedTensors apply_update(const UpdatePlan& plan, NamedTensors model, const std::uint8_t* result,
                          std::size_t size);

}  // namespace fedleaf::core
