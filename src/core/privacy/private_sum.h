// The sum of one private round: devices' clipped updates added in integer grid units, released
// with tree-aggregation noise on every coordinate of every row of every tensor, over a fixed
// denominator.
//
//   PrivateSum sum(layouts, {/*clip_norm=*/1.0, /*noise_multiplier=*/7.0,
//                            /*denominator=*/6500, /*max_reports=*/6500});
//   sum.add(update);                                  // each accepted device's decoded update
//   NamedTensors delta = sum.release(secret, round);  // dense, every tensor of `layouts`
//   NamedTensors same = sum.release(RoundNoise::draw(sum.noise_shape(), secret, round));
//
// What keeps the accounting of dp_ftrl_accountant.h valid (docs/design.md, "Privacy"): every
// device adds clip_to_grid(update) (clipped_contribution.h), so the integer sum changes by at most
// clip_norm / grid in L2 when one device comes or goes; release() adds to each coordinate the
// round's tree noise (tree_noise.h: prefix(round) - prefix(round - 1), each node N_Z(0, scale^2)
// in grid units, sigma = noise_multiplier x clip_norm) whether or not any device touched it, so
// which rows the devices touched is not released; then value = units x grid / denominator, where
// denominator is the round's target number of reports, never the count that came: dividing by a
// data-dependent count would not be post-processing. Tensors come out dense (every row carries
// noise) in their layout's dtype.
//
// Memory: one int64 per coordinate of the rows some device touched (and their row numbers), never
// a dense copy of a device's upload beyond the rows it sent; release() allocates the dense result.
//
// No overflow: every coordinate of a contribution is at most max_units_per_coordinate =
// floor(clip_norm / grid) in magnitude, so max_reports of them sum to at most max_reports times
// that; the constructor refuses settings where this passes 2^52, and each noise draw is at most
// 2^48 (tree_noise.h) with at most 2 x 56 draws per coordinate, so every int64 stays below 2^56.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/privacy/clipped_contribution.h"
#include "core/privacy/grid_gaussian.h"
#include "core/privacy/round_noise.h"
#include "core/privacy/tensor_layout.h"
#include "core/privacy/tree_noise.h"
#include "core/tensor/tensor.h"

namespace fedleaf::core {

struct PrivateSumSettings {
  double clip_norm;          // L2 bound on one device's whole update
  double noise_multiplier;   // the noise's standard deviation is noise_multiplier x clip_norm
  std::int64_t denominator;  // the round's target number of reports: what the sum is divided by
  std::int64_t max_reports;  // add() accepts at most this many updates
};

class PrivateSum {
 public:
  // InvalidInput naming the field: clip_norm and noise_multiplier finite and > 0, denominator
  // and max_reports >= 1, max_reports x floor(clip_norm / grid) <= 2^52, every layout F32/F64.
  PrivateSum(TensorLayouts layouts, const PrivateSumSettings& settings);

  // Adds one device's update (clip_to_grid's errors for bad input; the sum is unchanged then).
  // Conflict ("max_reports: ...") once max_reports updates were added.
  void add(const NamedTensors& update);

  // The released sum of round `round` (1-based, the tree's leaf): every tensor of the layouts,
  // dense. The same secret and round give the same noise on every call and in every process.
  // InvalidInput ("round: ...") unless 1 <= round <= kMaxTreeRounds.
  NamedTensors release(const TreeNoiseSecret& secret, std::uint64_t round) const;
  // The same release with the round's noise drawn ahead (round_noise.h): bit-identical to
  // release(secret, noise.round()) for the noise drawn from noise_shape() with that secret.
  // InvalidInput ("noise: ...") when `noise` was drawn for other layouts or another grid.
  NamedTensors release(const RoundNoise& noise) const;
  // What this sum's release noise is drawn for.
  RoundNoiseShape noise_shape() const { return {layouts_, noise_}; }

  const GridGaussian& noise() const { return noise_; }
  std::int64_t reports() const { return reports_; }
  std::int64_t clipped_reports() const { return clipped_reports_; }
  // Rows some device touched, over all tensors: what the accumulator's memory follows.
  std::size_t touched_rows() const;

 private:
  struct Accumulator {
    std::size_t row_size;
    std::unordered_map<std::uint64_t, std::size_t> offsets;  // row -> offset in units
    std::vector<std::int64_t> units;
  };

  // Every row of every tensor: its summed units plus add_noise(ordinal, row, units, n), scaled.
  template <class AddNoise>
  NamedTensors release_rows(const AddNoise& add_noise) const;

  TensorLayouts layouts_;
  PrivateSumSettings settings_;
  GridGaussian noise_;
  std::vector<Accumulator> sums_;  // by tensor ordinal
  std::int64_t reports_ = 0;
  std::int64_t clipped_reports_ = 0;
};

}  // namespace fedleaf::core
