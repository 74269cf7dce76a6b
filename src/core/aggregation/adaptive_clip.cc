#include "core/aggregation/adaptive_clip.h"

#include <algorithm>
#include <cmath>

#include "core/aggregation/round_aggregator.h"
#include "core/aggregation/update_plan.h"
#include "core/error.h"
#include "core/wire/text_format.h"

namespace fedleaf::core {

double next_clip_bound(double bound, std::uint64_t reports, std::uint64_t clipped,
                       const AdaptiveClip& rule) {
  if (!(std::isfinite(bound) && bound > 0.0)) {
    throw InvalidInput("adaptive clip: the bound " + format_double_exact(bound) +
                       " is not a finite number > 0");
  }
  if (clipped > reports) {
    throw InvalidInput("adaptive clip: " + std::to_string(clipped) +
                       " clipped reports exceed the " + std::to_string(reports) +
                       " reports of the round");
  }
  if (reports == 0) return bound;
  const double unclipped_share =
      static_cast<double>(reports - clipped) / static_cast<double>(reports);
  const double next = bound * std::exp(-rule.learning_rate * (unclipped_share - rule.quantile));
  return std::clamp(next, kMinAdaptiveClipBound, kMaxAdaptiveClipBound);
}

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

}  // namespace fedleaf::core
