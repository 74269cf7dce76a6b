// One device's update as a private sum adds it: clipped to an L2 norm over all its tensors
// together, and rounded toward zero onto the noise's grid, in integer grid units, row by row.
//
//   ClippedContribution c = clip_to_grid(update, layouts, /*clip_norm=*/1.0, noise.grid());
//   for (const ContributionRows& t : c.tensors) { /* t.rows[i]: units t.units[i*row_size...] */ }
//
// Why this shape (grid_gaussian.h, docs/design.md "Privacy"): the discrete Gaussian keeps the
// Gaussian's zCDP bound only on an integer-valued sum whose L2 sensitivity is the clip norm. The
// norm is taken in float64 over every coordinate the device sent (dense, row-sparse and COO
// tensors alike, repeated indices summed first, as the sum would add them); a device above
// clip_norm is scaled down to it, one at or below is not scaled; each coordinate is then
// truncated toward zero to whole grid units, so no coordinate grows. Floating-point rounding of
// the norm could still leave the result a hair above the clip: the squared norm of the integer
// units is checked exactly against (clip_norm / grid)^2 in 128-bit integers, and the scale shrunk
// until it holds. Memory is proportional to the rows the device sent; nothing is densified beyond
// them, and rows whose units are all zero are dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/privacy/tensor_layout.h"
#include "core/tensor/tensor.h"

namespace fedleaf::core {

struct ContributionRows {
  std::uint32_t tensor;  // ordinal in the layouts' name order
  std::size_t row_size;
  std::vector<std::uint64_t> rows;  // sorted, unique
  std::vector<std::int64_t> units;  // rows.size() x row_size, row-major
};

struct ClippedContribution {
  std::vector<ContributionRows> tensors;  // in name order; only tensors with a nonzero row
  double norm;                            // the update's L2 norm before clipping, in float64
  bool clipped;                           // norm > clip_norm: the update was scaled down
};

// The largest |units| of one coordinate of a clipped contribution: floor(clip_norm / grid).
// InvalidInput ("clip_norm: ...", "grid: ...") unless both are finite and > 0, grid is a power of
// two and clip_norm / grid <= 2^52.
std::int64_t max_units_per_coordinate(double clip_norm, double grid);

// InvalidInput naming "update['<name>']" and the rule for a tensor the layouts do not have, a
// shape or dense_shape other than the layout's, values that are not F32/F64 or not finite; and as
// max_units_per_coordinate for clip_norm and grid. (Rows out of range never get here: the tensor
// constructors refuse them against the dense_shape, which must be the layout's shape.)
ClippedContribution clip_to_grid(const NamedTensors& update, const TensorLayouts& layouts,
                                 double clip_norm, double grid);

}  // namespace fedleaf::core
