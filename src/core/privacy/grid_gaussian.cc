#include "core/privacy/grid_gaussian.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace fedleaf::core {
namespace {

constexpr int kScaleBits = 12;

struct GridAndScale {
  double grid;
  std::int64_t scale;
};

GridAndScale grid_for(double sigma) {
  if (!(std::isfinite(sigma) && sigma > std::ldexp(1.0, -1000))) {
    throw InvalidInput("sigma: must be a finite number above 2^-1000, got " +
                       std::to_string(sigma));
  }
  int exponent = 0;
  std::frexp(sigma, &exponent);  // sigma in [2^(exponent-1), 2^exponent)
  const double grid = std::ldexp(1.0, exponent - 1 - kScaleBits);
  // sigma / grid is exact (a power-of-two division) and in [2^12, 2^13).
  return {grid, static_cast<std::int64_t>(std::ceil(sigma / grid))};
}

}  // namespace

GridGaussian::GridGaussian(double sigma)
    : grid_(grid_for(sigma).grid),
      scale_(grid_for(sigma).scale),
      gaussian_(static_cast<std::uint64_t>(scale_) * static_cast<std::uint64_t>(scale_), 1) {}

}  // namespace fedleaf::core
