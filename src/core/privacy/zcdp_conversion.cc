#include "core/privacy/zcdp_conversion.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace fedleaf::core {
namespace {

double epsilon_at(double alpha, double rho, double log_inv_delta) {
  return alpha * rho + (log_inv_delta - std::log(alpha)) / (alpha - 1) + std::log1p(-1 / alpha);
}

}  // namespace

double epsilon_from_zcdp(double rho, double delta, const char* delta_name) {
  if (!(std::isfinite(rho) && rho >= 0)) {
    throw InvalidInput("rho: must be a finite number >= 0, got " + std::to_string(rho));
  }
  if (!(delta > 0 && delta < 1)) {
    throw InvalidInput(std::string(delta_name) + ": must be in (0, 1), got " +
                       std::to_string(delta));
  }
  if (rho == 0) return 0;
  const double log_inv_delta = -std::log(delta);
  // derivative(alpha) > 0 iff alpha is past the minimiser.
  const auto past_minimum = [&](double alpha) {
    return rho * (alpha - 1) * (alpha - 1) + std::log(alpha * delta) > 0;
  };
  double low = 1;
  double high = 2;
  while (!past_minimum(high)) {
    low = high;
    high *= 2;
  }
  for (int i = 0; i < 200; ++i) {
    const double mid = low + (high - low) / 2;
    if (mid <= low || mid >= high) break;
    (past_minimum(mid) ? high : low) = mid;
  }
  return std::fmax(0.0, epsilon_at(high, rho, log_inv_delta));
}

}  // namespace fedleaf::core
