// The privacy calculator: what a DP-FTRL setting reaches, or the noise a target epsilon needs,
// with the facts that say whether the participation limits can be met by the population.
//
//   PrivacyPlanInput in;
//   in.devices = 1'000'000; in.per_round = 6500; in.rounds = 2000;
//   in.max_participations = 6; in.min_separation = 313; in.delta = 1e-10;
//   in.noise_multiplier = 7.0;                 // or in.target_epsilon = 8.0
//   PrivacyPlan plan = plan_privacy(in);       // plan.epsilon 8.90, plan.rho 0.806
//
// devices and per_round do not enter epsilon (dp_ftrl_accountant.h: with participation limits
// and no sampling, device-level DP-FTRL's guarantee does not depend on the population size).
// They decide whether a run can keep the limits at all:
//   - participations_possible = min(max_participations, ceil(rounds / (min_separation + 1))),
//     the most rounds one device can take part in;
//   - device_rounds_needed = rounds x per_round must be <= devices x participations_possible
//     (device_rounds_available): every round needs per_round distinct devices;
//   - devices_needed_per_window = per_round x min(rounds, min_separation + 1) <= devices: a
//     device in round t sits out rounds t+1..t+min_separation, so each window of
//     min_separation + 1 rounds needs that many different devices.
// Both hold iff a schedule exists (devices in a ring, each round taking the next per_round of
// them); devices_needed is the least population meeting both, feasible whether devices does.
#pragma once

#include <cstdint>
#include <optional>

#include "core/privacy/privacy_field_names.h"

namespace fedleaf::core {

struct PrivacyPlanInput {
  std::int64_t devices = 0;    // enrolled devices, >= 1
  std::int64_t per_round = 0;  // devices per round (the round's target size), >= 1
  std::int64_t rounds = 0;
  std::int64_t max_participations = 0;
  std::int64_t min_separation = 0;
  double delta = 0;
  std::optional<double> noise_multiplier;  // exactly one of these two
  std::optional<double> target_epsilon;
};

struct PrivacyPlan {
  double noise_multiplier = 0;  // the given one, or the least that reaches target_epsilon
  double epsilon = 0;           // at delta after all rounds
  double rho = 0;               // zCDP after all rounds
  double delta = 0;
  std::int64_t squared_sensitivity = 0;  // in clip norms squared
  std::int64_t participations_possible = 0;
  std::int64_t device_rounds_needed = 0;
  std::int64_t device_rounds_available = 0;
  std::int64_t devices_needed_per_window = 0;
  std::int64_t devices_needed = 0;
  bool feasible = false;
  double mean_participations = 0;  // device_rounds_needed / devices
};

// InvalidInput naming the field (as `names` spells it) and the rule for any setting out of range,
// or when both or neither of noise_multiplier and target_epsilon are given.
PrivacyPlan plan_privacy(const PrivacyPlanInput& in, const PrivacyFieldNames& names = {});

}  // namespace fedleaf::core
