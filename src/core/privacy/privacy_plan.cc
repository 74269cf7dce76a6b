#include "core/privacy/privacy_plan.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/privacy/dp_ftrl_accountant.h"

namespace fedleaf::core {
namespace {

// Bounds that keep the products below within 63 bits (rounds is at most 2^31 - 1).
constexpr std::int64_t kMaxDevices = std::int64_t{1} << 32;
constexpr std::int64_t kMaxPerRound = (std::int64_t{1} << 31) - 1;

void check_count(std::int64_t value, std::int64_t max, const char* field) {
  if (value < 1 || value > max) {
    throw InvalidInput(std::string(field) + ": must be an integer in [1, " + std::to_string(max) +
                       "], got " + std::to_string(value));
  }
}

}  // namespace

PrivacyPlan plan_privacy(const PrivacyPlanInput& in, const PrivacyFieldNames& names) {
  check_count(in.devices, kMaxDevices, names.devices);
  check_count(in.per_round, kMaxPerRound, names.per_round);
  if (in.noise_multiplier.has_value() == in.target_epsilon.has_value()) {
    throw InvalidInput(std::string("exactly one of ") + names.noise_multiplier + " and " +
                       names.target_epsilon + " must be given");
  }
  const DpFtrlAccountant accountant({in.rounds, in.max_participations, in.min_separation}, names);

  PrivacyPlan plan;
  plan.delta = in.delta;
  plan.noise_multiplier = in.noise_multiplier.has_value()
                              ? *in.noise_multiplier
                              : accountant.noise_multiplier_for(*in.target_epsilon, in.delta);
  plan.epsilon = accountant.epsilon(plan.noise_multiplier, in.delta);
  plan.rho = accountant.rho(plan.noise_multiplier);
  plan.squared_sensitivity = accountant.squared_sensitivity();

  const std::int64_t window = std::min(in.rounds, in.min_separation + 1);
  plan.participations_possible =
      std::min(in.max_participations, (in.rounds + in.min_separation) / (in.min_separation + 1));
  plan.device_rounds_needed = in.rounds * in.per_round;
  plan.device_rounds_available = in.devices * plan.participations_possible;
  plan.devices_needed_per_window = in.per_round * window;
  const std::int64_t for_rounds =
      (plan.device_rounds_needed + plan.participations_possible - 1) / plan.participations_possible;
  plan.devices_needed = std::max(for_rounds, plan.devices_needed_per_window);
  plan.feasible = in.devices >= plan.devices_needed;
  plan.mean_participations =
      static_cast<double>(plan.device_rounds_needed) / static_cast<double>(in.devices);
  return plan;
}

}  // namespace fedleaf::core
