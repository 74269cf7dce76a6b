// Adaptive, quantile-based clipping (Andrew, Thakkar, McMahan, Ramaswamy, "Differentially
// Private Learning with Adaptive Clipping", NeurIPS 2021): a tensor's robust clip bound follows
// a target quantile γ of the reports' update sizes (root mean square or L2 norm, as the clip's
// kind says) from round to round.
//
//   const AdaptiveClip rule{/*quantile=*/0.5, /*learning_rate=*/0.2};
//   double next = next_clip_bound(/*bound=*/1.0, /*reports=*/16, /*clipped=*/2, rule);  // < 1
//   // next_round_plan.h applies it to a plan: with_clip_bounds(plan, {{"emb/weight", next}})
//
// Within a round the bound is fixed: accumulators fold each report as it arrives and cannot
// rescale one already folded. After round t, with b̄_t the share of its reports that were NOT
// clipped (the accumulator counts the clipped ones),
//
//   C_{t+1} = C_t · exp(−η (b̄_t − γ))
//
// (the paper's geometric update, its Algorithm 1 without the noise on b̄ that differential
// privacy adds). The bound shrinks while more than a share γ of the reports fit under it and
// grows while fewer do, so it settles around the γ-quantile of the honest reports' sizes: a
// report scaled ×1e6 is then cut to the size of a typical honest one, whatever the plan's initial
// bound was. It moves by a factor of at most exp(η·max(γ, 1 − γ)) per round, so η trades speed
// against jitter around the quantile. Bounds are kept in [kMinAdaptiveClipBound,
// kMaxAdaptiveClipBound], so they stay finite and > 0 however long a population runs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fedleaf::core {

struct AdaptiveClip {
  double quantile = 0.0;       // γ in (0, 1): the share of reports the bound aims to leave alone
  double learning_rate = 0.0;  // η in (0, 10]: the step of the geometric update

  friend bool operator==(const AdaptiveClip& a, const AdaptiveClip& b) {
    return a.quantile == b.quantile && a.learning_rate == b.learning_rate;
  }
  friend bool operator!=(const AdaptiveClip& a, const AdaptiveClip& b) { return !(a == b); }
};

inline constexpr double kMinAdaptiveClipBound = 1e-12;
inline constexpr double kMaxAdaptiveClipBound = 1e12;

// The bound of the round after one that clipped `clipped` of its `reports` reports at `bound`.
// A round without reports leaves the bound as it was. Requires clipped ≤ reports and a finite
// bound > 0 (else InvalidInput); the result is clamped to [kMinAdaptiveClipBound,
// kMaxAdaptiveClipBound].
double next_clip_bound(double bound, std::uint64_t reports, std::uint64_t clipped,
                       const AdaptiveClip& rule);

// Per tensor name, a clip bound (sorted by name).
using ClipBounds = std::vector<std::pair<std::string, double>>;

}  // namespace fedleaf::core
