// Gaussian noise of a real standard deviation, exactly, as a multiple of a fixed grid:
// grid x N_Z(0, scale^2), the discrete Gaussian of discrete_gaussian.h in units of the grid.
//
//   GridGaussian noise(/*sigma=*/7.0 * clip_norm);
//   std::int64_t units = noise.sample_units(bits);   // add to a sum kept in grid units
//   double value = units * noise.grid();             // exact: |units| < 2^53
//
// How the grid is chosen: grid = 2^e, the power of two with sigma / grid in [2^12, 2^13), and
// scale = ceil(sigma / grid), an integer in [2^12, 2^13]. The noise is at least the requested one
// (scale x grid >= sigma, larger by less than 2^-12 relative), so accounting with sigma is
// conservative; a power of two keeps grid multiples exact in binary floating point.
//
// What the accounting relies on (Canonne, Kamath, Steinke 2020, arXiv:2004.00010, Theorem 14 and
// the remark after it, and its Theorem 4 in one dimension): adding independent N_Z(0, sigma^2) to
// each coordinate of an integer-valued query whose L2 sensitivity is Delta gives
// (Delta^2 / (2 sigma^2))-zCDP, the same bound as the continuous Gaussian. Here the integers are
// grid units, so the bound holds for the sum of updates only if that sum is exactly an integer
// number of grid units per coordinate, with the same L2 sensitivity as before quantization. The
// aggregation that uses this noise must therefore put each device's clipped update on the grid by
// rounding every coordinate toward zero (|rounded| <= |x| coordinatewise, so the L2 norm never
// grows past the clip norm), sum in integers, and add sample_units() to every coordinate of that
// integer sum; what follows (scaling by grid, the fixed denominator, the server optimizer) is
// post-processing of the released integers.
#pragma once

#include <cstdint>

#include "core/privacy/bit_reservoir.h"
#include "core/privacy/discrete_gaussian.h"
#include "core/privacy/random_bits.h"

namespace fedleaf::core {

class GridGaussian {
 public:
  // InvalidInput ("sigma: ...") unless sigma is finite, > 0 and a normal double above 2^-1000.
  explicit GridGaussian(double sigma);

  double grid() const { return grid_; }
  std::int64_t scale() const { return scale_; }  // the noise's standard deviation in grid units
  double sigma() const { return static_cast<double>(scale_) * grid_; }  // >= the requested one

  std::int64_t sample_units(RandomBits& bits) const { return gaussian_.sample(bits); }
  // The same from a reservoir kept across draws (discrete_gaussian.h): what runs of draws use.
  std::int64_t sample_units(BitReservoir& bits) const { return gaussian_.sample(bits); }

 private:
  double grid_;
  std::int64_t scale_;
  DiscreteGaussian gaussian_;
};

}  // namespace fedleaf::core
