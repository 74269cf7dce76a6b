#include "core/aggregation/round/next_round_plan.h"

#include <algorithm>
#include <cmath>

#include "core/aggregation/robust/adaptive_example_cap.h"
#include "core/error.h"
#include "core/text/text_format.h"

namespace fedleaf::core {

ClipBounds initial_clip_bounds(const UpdatePlan& plan) {
  ClipBounds bounds;
  for (const TensorUpdatePlan& t : plan.tensors) {
    if (t.adaptive_clip) bounds.emplace_back(t.name, t.op.clip.bound);
  }
  return bounds;
}

ClipBounds next_clip_bounds(const UpdatePlan& plan, const RoundStats& stats) {
  ClipBounds next;
  for (const auto& [name, bound] : stats.clip_bound_per_tensor) {
    const TensorUpdatePlan* t = plan.find(name);
    if (t == nullptr || !t->adaptive_clip) continue;
    const auto clipped =
        std::find_if(stats.clipped_per_tensor.begin(), stats.clipped_per_tensor.end(),
                     [&n = name](const auto& entry) { return entry.first == n; });
    const std::uint64_t num_clipped =
        clipped == stats.clipped_per_tensor.end() ? 0 : clipped->second;
    next.emplace_back(name,
                      next_clip_bound(bound, stats.num_reports, num_clipped, *t->adaptive_clip));
  }
  return next;
}

UpdatePlan with_clip_bounds(UpdatePlan plan, const ClipBounds& bounds) {
  for (const auto& [name, bound] : bounds) {
    auto it = std::find_if(plan.tensors.begin(), plan.tensors.end(),
                           [&n = name](const TensorUpdatePlan& t) { return t.name == n; });
    if (it == plan.tensors.end() || !it->adaptive_clip) continue;
    if (!(std::isfinite(bound) && bound > 0.0)) {
      throw InvalidInput(it->path + ".clip: the round's adaptive bound " +
                         format_double_exact(bound) + " is not a finite number > 0");
    }
    it->op.clip.bound = bound;
  }
  return plan;
}

std::optional<std::uint64_t> next_example_cap(const UpdatePlan& plan, const RoundStats& stats) {
  if (!plan.adaptive_example_cap || stats.example_cap == 0) return std::nullopt;
  return next_example_cap(stats.example_cap, stats.median_claim, *plan.adaptive_example_cap);
}

UpdatePlan with_example_cap(UpdatePlan plan, std::uint64_t cap) {
  if (!plan.adaptive_example_cap) return plan;
  check_example_cap(cap, "plan.max_examples_per_report: the round's adaptive cap");
  plan.max_examples_per_report = cap;
  return plan;
}

}  // namespace fedleaf::core
