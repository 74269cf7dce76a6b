#include "core/privacy/dp_ftrl_accountant.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "core/privacy/zcdp_conversion.h"

namespace fedleaf::core {
namespace {

void check_positive(double value, const char* field) {
  if (!(std::isfinite(value) && value > 0)) {
    throw InvalidInput(std::string(field) + ": must be a finite number > 0, got " +
                       std::to_string(value));
  }
}

}  // namespace

DpFtrlAccountant::DpFtrlAccountant(const ParticipationLimits& limits,
                                   const PrivacyFieldNames& names)
    : limits_(limits),
      names_(names),
      tree_(limits.rounds, limits.max_participations, limits.min_separation, names),
      squared_all_rounds_(tree_.squared(limits.rounds)) {}

std::int64_t DpFtrlAccountant::squared_sensitivity(std::int64_t after_rounds) const {
  if (after_rounds < 0 || after_rounds > limits_.rounds) {
    throw InvalidInput("after_rounds: must be in [0, " + std::to_string(limits_.rounds) +
                       "] (0: all rounds), got " + std::to_string(after_rounds));
  }
  if (after_rounds == 0 || after_rounds == limits_.rounds) return squared_all_rounds_;
  return tree_.squared(after_rounds);
}

double DpFtrlAccountant::rho(double noise_multiplier, std::int64_t after_rounds) const {
  check_positive(noise_multiplier, names_.noise_multiplier);
  const auto s2 = static_cast<double>(squared_sensitivity(after_rounds));
  return s2 / (2 * noise_multiplier * noise_multiplier);
}

double DpFtrlAccountant::epsilon(double noise_multiplier, double delta,
                                 std::int64_t after_rounds) const {
  return epsilon_from_zcdp(rho(noise_multiplier, after_rounds), delta, names_.delta);
}

double DpFtrlAccountant::noise_multiplier_for(double target_epsilon, double delta) const {
  check_positive(target_epsilon, names_.target_epsilon);
  epsilon_from_zcdp(0, delta, names_.delta);  // validates delta
  // epsilon decreases as the noise grows: bracket, then bisect on a log scale.
  double low = 1;
  double high = 1;
  while (epsilon(low, delta) <= target_epsilon) {
    high = low;
    low /= 2;
    if (low < 1e-12) return high;
  }
  while (epsilon(high, delta) > target_epsilon) {
    low = high;
    high *= 2;
    if (high > 1e12) {
      throw InvalidInput(std::string(names_.target_epsilon) +
                         ": no noise multiplier up to 1e12 reaches epsilon " +
                         std::to_string(target_epsilon) + " at this delta");
    }
  }
  while (high - low > 1e-9 * high) {
    const double mid = std::sqrt(low * high);
    (epsilon(mid, delta) <= target_epsilon ? high : low) = mid;
  }
  return high;
}

}  // namespace fedleaf::core
