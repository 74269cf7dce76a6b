// One round's tree noise on every coordinate of every tensor, drawn ahead of the round's
// release: what lets a server draw it while the round is still open.
//
//   RoundNoiseShape shape = sum.noise_shape();            // layouts and grid of the PrivateSum
//   RoundNoise noise = RoundNoise::draw(shape, secret, /*round=*/5);   // any thread, no lock
//   NamedTensors delta = sum.release(noise);              // the same as sum.release(secret, 5)
//
// Why: a round's noise depends only on the population's secret and the round number
// (tree_noise.h), never on what devices sent, so it can be drawn before the round's reports
// come. A release that draws it inline keeps the round closed for as long as the draws take
// (every coordinate of every row, a discrete Gaussian each); with the draws done earlier, the
// release is one pass of integer additions. The result is the same integers in the same order,
// so a release is bit-identical either way (private_sum_test.cc).
//
// Secrecy: this is the round's noise itself, as secret as the population's secret for this
// round (whoever holds it can subtract it from the released model). It is never logged, served
// or stored; the destructor overwrites it.
//
// Memory: one int64 per coordinate of the model (8 bytes per parameter).
#pragma once

#include <cstdint>
#include <vector>

#include "core/privacy/grid_gaussian.h"
#include "core/privacy/tensor_layout.h"
#include "core/privacy/tree_noise.h"

namespace fedleaf::core {

// What a release's noise is drawn for: the tensors' layouts and the grid's Gaussian.
struct RoundNoiseShape {
  TensorLayouts layouts;
  GridGaussian gaussian;
};

class RoundNoise {
 public:
  // The noise of tree round `round`: TreeNoise::for_round on every row of every tensor, dense.
  // InvalidInput as TreeNoise::for_round ("round: ...") and row_split.
  static RoundNoise draw(const RoundNoiseShape& shape, const TreeNoiseSecret& secret,
                         std::uint64_t round);

  ~RoundNoise();
  RoundNoise(RoundNoise&&) = default;
  RoundNoise& operator=(RoundNoise&&) = default;
  RoundNoise(const RoundNoise&) = delete;
  RoundNoise& operator=(const RoundNoise&) = delete;

  std::uint64_t round() const { return round_; }
  // The grid units the noise was drawn in, and the Gaussian's scale in them.
  double grid() const { return grid_; }
  std::int64_t scale() const { return scale_; }
  std::size_t tensors() const { return units_.size(); }
  // Tensor `ordinal` (name order), row-major: rows x row_size units.
  const std::vector<std::int64_t>& units(std::size_t ordinal) const { return units_.at(ordinal); }

 private:
  RoundNoise() = default;
  std::uint64_t round_ = 0;
  double grid_ = 0;
  std::int64_t scale_ = 0;
  std::vector<std::vector<std::int64_t>> units_;  // by tensor ordinal
};

}  // namespace fedleaf::core
