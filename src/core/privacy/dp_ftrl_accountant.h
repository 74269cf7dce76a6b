// The privacy accountant of DP-FTRL with tree aggregation: rho-zCDP and (epsilon, delta) per
// device, after any number of rounds, and the noise multiplier a target epsilon needs.
//
//   DpFtrlAccountant accountant({/*rounds=*/2000, /*max_participations=*/6,
//                                /*min_separation=*/313});
//   accountant.rho(7.0);                     // 0.806 (79 / (2 * 7^2))
//   accountant.epsilon(7.0, 1e-10);          // 8.90
//   accountant.epsilon(7.0, 1e-10, 500);     // spent after the first 500 rounds
//   accountant.noise_multiplier_for(8.0, 1e-10);   // the least noise reaching epsilon <= 8
//
// The mechanism (Kairouz et al., ICML 2021, "Practical and Private (Deep) Learning without
// Sampling or Shuffling"): every node of the tree over the rounds gets independent Gaussian noise
// of standard deviation noise_multiplier x clip_norm on every coordinate, each device's update
// clipped to clip_norm in L2. Releasing all nodes is a Gaussian mechanism with squared L2
// sensitivity S^2 clip_norm^2 (tree_sensitivity.h), hence rho = S^2 / (2 noise_multiplier^2)
// zCDP (Bun and Steinke 2016, "Concentrated Differential Privacy: Simplifications, Extensions,
// and Lower Bounds", Proposition 1.6), converted to (epsilon, delta) by zcdp_conversion.h. The
// unit is a device (add/remove one device's updates; the notebook's "zero-out" neighbours).
// Neither the population size nor the devices per round enter: there is no sampling to amplify.
#pragma once

#include <cstdint>

#include "core/privacy/privacy_field_names.h"
#include "core/privacy/tree_sensitivity.h"

namespace fedleaf::core {

struct ParticipationLimits {
  std::int64_t rounds = 0;              // rounds of the run (leaves of the tree), >= 1
  std::int64_t max_participations = 0;  // rounds one device may take part in, >= 1
  std::int64_t min_separation = 0;      // rounds strictly between two of one device's, >= 0
};

class DpFtrlAccountant {
 public:
  // InvalidInput naming the field (names) for limits out of range (tree_sensitivity.h).
  explicit DpFtrlAccountant(const ParticipationLimits& limits, const PrivacyFieldNames& names = {});

  const ParticipationLimits& limits() const { return limits_; }
  // Squared sensitivity after `after_rounds` rounds (default: all), in clip norms squared.
  std::int64_t squared_sensitivity(std::int64_t after_rounds = 0) const;
  // rho-zCDP after `after_rounds` rounds (0: all of them). InvalidInput unless noise_multiplier
  // is finite and > 0 and 0 <= after_rounds <= rounds.
  double rho(double noise_multiplier, std::int64_t after_rounds = 0) const;
  // epsilon at delta after `after_rounds` rounds (0: all); InvalidInput also for delta outside
  // (0, 1). Non-decreasing in after_rounds, decreasing in noise_multiplier.
  double epsilon(double noise_multiplier, double delta, std::int64_t after_rounds = 0) const;
  // The smallest noise multiplier (to a relative 1e-9, rounded up) whose epsilon over all rounds
  // is at most target_epsilon. InvalidInput unless target_epsilon is finite and > 0.
  double noise_multiplier_for(double target_epsilon, double delta) const;

 private:
  ParticipationLimits limits_;
  PrivacyFieldNames names_;
  TreeSensitivity tree_;
  std::int64_t squared_all_rounds_;
};

}  // namespace fedleaf::core
