#include "core/aggregation/robust/adaptive_clip.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/text/text_format.h"

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

}  // namespace fedleaf::core
