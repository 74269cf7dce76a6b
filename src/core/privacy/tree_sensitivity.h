// The worst-case squared L2 sensitivity of DP-FTRL's tree aggregation under participation limits.
//
//   TreeSensitivity tree(/*max_rounds=*/2000, /*max_participations=*/6, /*min_separation=*/313);
//   std::int64_t s2 = tree.squared(2000);   // 79: rho = s2 / (2 * noise_multiplier^2)
//   std::int64_t s2_100 = tree.squared(100); // after the first 100 rounds
//
// Kairouz, McMahan, Song, Thakkar, Thakurta, Xu, "Practical and Private (Deep) Learning without
// Sampling or Shuffling", ICML 2021 (arXiv:2103.00039 v3), Appendix D: the tree without restarts
// over T rounds releases one noised sum per node of the forest made of the complete dyadic
// subtrees of the first T leaves (every node that is complete after T rounds; after r < T rounds
// exactly the forest of r leaves has been released). A device that takes part in round t adds at
// most the clip norm to leaf t, hence to every node above it; with each device's update clipped
// to norm 1, the squared sensitivity of the whole release is max over participation patterns c
// of sum over nodes z of c(z)^2, c(z) the number of the device's rounds under z. Theorem D.3
// computes that maximum by dynamic programming over the tree; this is that recursion, bottom-up.
// The "efficient" (Honaker) estimator only post-processes the node values: same sensitivity.
//
// Participation limits: at most `max_participations` rounds per device, and at least
// `min_separation` rounds strictly between two rounds of one device (rounds x < y are both
// allowed iff y - x - 1 >= min_separation; 0 allows consecutive rounds). This is the meaning of
// the paper's xi and of the published Gboard accounting (google-research/federated,
// dp_ftrl/blogpost_supplemental_privacy_accounting.ipynb, "min_separation=y-x-1").
//
// Cost: tables of (k + 1) x (xi + 1)^2 integers per tree level; building them costs about
// sum over levels of k^2 (xi + 1)^3 / 2 additions, k the participations that fit in the level.
// Settings beyond kMaxWork (about 10 s on one core) or 2^26 table entries are refused
// (InvalidInput naming min_separation and max_participations) rather than left to run for
// minutes, and so are more participations than the integer tables hold (participations^2 x
// (log2(rounds) + 1) < 2^30, about 5,700 participations over 10,000 rounds; InvalidInput naming
// max_participations).
#pragma once

#include <cstdint>
#include <vector>

#include "core/privacy/privacy_field_names.h"

namespace fedleaf::core {

class TreeSensitivity {
 public:
  static constexpr double kMaxWork = 1.0e10;

  // InvalidInput (naming the field) unless max_rounds >= 1, max_participations >= 1,
  // min_separation >= 0, each at most 2^31 - 1, and the limits above.
  TreeSensitivity(std::int64_t max_rounds, std::int64_t max_participations,
                  std::int64_t min_separation, const PrivacyFieldNames& names = {});

  // The squared sensitivity of the release after `rounds` rounds, in units of the clip norm
  // squared; InvalidInput unless 1 <= rounds <= max_rounds.
  std::int64_t squared(std::int64_t rounds) const;

  // The most rounds a device can take part in within `rounds` rounds under both limits.
  std::int64_t participations_possible(std::int64_t rounds) const;

 private:
  // Table of one subtree shape: value(k, s, e) = the largest sum of squared counts over its nodes
  // with exactly k participations, none in its first s leaves, and the separation after the last
  // one (or the s blocked leaves themselves, when k = 0) reaching at most e leaves past its end;
  // kInfeasible when no pattern fits. s, e in [0, min_separation].
  struct Table {
    int level = 0;
    std::int64_t max_k = 0;  // values is empty when max_k <= 1: see at()
    std::vector<std::int32_t> values;
  };

  std::int32_t& at(Table& t, std::int64_t k, std::int64_t s, std::int64_t e) const;
  std::int32_t at(const Table& t, std::int64_t k, std::int64_t s, std::int64_t e) const;
  std::int64_t max_k_for(std::int64_t leaves) const;
  Table complete_tree(int level, const Table* child) const;

  std::int64_t max_rounds_;
  std::int64_t max_participations_;
  std::int64_t separation_;  // min_separation, capped at max_rounds - 1 (same limits)
  std::int64_t width_;       // separation_ + 1: the values s and e take
  const char* rounds_name_;
  std::vector<Table> levels_;  // levels_[j]: the complete tree of 2^j leaves
};

}  // namespace fedleaf::core
