#include "core/privacy/clipped_contribution.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <variant>

namespace fedleaf::core {
namespace {

__extension__ typedef unsigned __int128 Uint128;

// A tensor of the update with its rows gathered: sorted unique rows, repeated ones summed.
struct Gathered {
  std::uint32_t tensor;
  std::size_t row_size;
  std::vector<std::uint64_t> rows;
  std::vector<double> values;
};

std::vector<double> float_values(const DenseTensor& values, const std::string& context) {
  std::vector<double> out(values.size());
  if (values.dtype() == DType::F32) {
    std::copy_n(values.data<float>(), out.size(), out.begin());
  } else if (values.dtype() == DType::F64) {
    std::copy_n(values.data<double>(), out.size(), out.begin());
  } else {
    throw InvalidInput(context + ": values must be F32 or F64, got " +
                       std::string(dtype_name(values.dtype())));
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) {
      throw InvalidInput(context + ": values must be finite, element " + std::to_string(i) +
                         " is " + std::to_string(out[i]));
    }
  }
  return out;
}

void check_dense_shape(const DenseShape& got, const Shape& want, const std::string& context) {
  const bool same = got.size() == want.size() &&
                    std::equal(got.begin(), got.end(), want.begin(), [](std::int64_t g, auto w) {
                      return g >= 0 && static_cast<std::uint64_t>(g) == w;
                    });
  if (!same) {
    throw InvalidInput(context + ": dense_shape " + shape_to_string(got) +
                       " must be the model's shape " + shape_to_string(want));
  }
}

// Makes `rows` the sorted unique rows of out, every value zero.
void set_rows(std::vector<std::uint64_t> rows, Gathered& out) {
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  out.rows = std::move(rows);
  out.values.assign(out.rows.size() * out.row_size, 0.0);
}

// The first value of `row` in out.values; the row is one of out.rows.
double* row_values(Gathered& out, std::uint64_t row) {
  const auto at = static_cast<std::size_t>(std::lower_bound(out.rows.begin(), out.rows.end(), row) -
                                           out.rows.begin());
  return out.values.data() + at * out.row_size;
}

// Row and index ranges need no check here: the tensor constructors enforce them against the
// dense_shape, which must equal the layout's shape. Repeated rows and indices are summed.
Gathered gather(const Tensor& tensor, const std::string& context, const TensorLayout& layout,
                RowSplit split, std::uint32_t ordinal) {
  Gathered out{ordinal, split.row_size, {}, {}};
  if (const auto* dense = std::get_if<DenseTensor>(&tensor)) {
    if (dense->shape() != layout.shape) {
      throw InvalidInput(context + ": shape " + shape_to_string(dense->shape()) +
                         " must be the model's shape " + shape_to_string(layout.shape));
    }
    out.values = float_values(*dense, context);
    out.rows.resize(static_cast<std::size_t>(split.rows));  // <= the element count: fits size_t
    for (std::size_t r = 0; r < out.rows.size(); ++r) out.rows[r] = r;
    return out;
  }
  if (const auto* sparse = std::get_if<RowSparseTensor>(&tensor)) {
    check_dense_shape(sparse->dense_shape(), layout.shape, context);
    const std::vector<double> values = float_values(sparse->values(), context);
    const auto& indices = sparse->indices();
    set_rows({indices.begin(), indices.end()}, out);
    for (std::size_t i = 0; i < sparse->num_rows(); ++i) {
      double* target = row_values(out, static_cast<std::uint64_t>(indices(i)));
      const double* source = values.data() + i * split.row_size;
      for (std::size_t j = 0; j < split.row_size; ++j) target[j] += source[j];
    }
    return out;
  }
  const auto& coo = std::get<SparseTensor>(tensor);
  check_dense_shape(coo.dense_shape(), layout.shape, context);
  const std::vector<double> values = float_values(coo.values(), context);
  const auto row_of = [&](std::size_t k) {
    return coo.rank() == 0 ? std::uint64_t{0} : static_cast<std::uint64_t>(coo.indices()(k, 0));
  };
  std::vector<std::uint64_t> rows(coo.nnz());
  for (std::size_t k = 0; k < rows.size(); ++k) rows[k] = row_of(k);
  set_rows(std::move(rows), out);
  for (std::size_t k = 0; k < coo.nnz(); ++k) {
    std::size_t offset = 0;  // row-major within the row
    for (std::size_t d = 1; d < coo.rank(); ++d) {
      offset = offset * layout.shape[d] + static_cast<std::size_t>(coo.indices()(k, d));
    }
    row_values(out, row_of(k))[offset] += values[k];
  }
  return out;
}

// floor((clip_norm / grid)^2), exactly: the bound on a clipped contribution's squared units.
Uint128 squared_units_limit(double units) {
  int exponent = 0;
  const double fraction = std::frexp(units, &exponent);  // units = fraction * 2^exponent
  const auto mantissa = static_cast<std::uint64_t>(std::ldexp(fraction, 53));
  const int shift = exponent - 53;  // units = mantissa * 2^shift
  if (shift >= 0) {
    const Uint128 whole = Uint128{mantissa} << shift;  // <= 2^52 (max_units_per_coordinate)
    return whole * whole;
  }
  const Uint128 square = Uint128{mantissa} * mantissa;
  return -2 * shift >= 128 ? 0 : square >> (-2 * shift);
}

// Truncates every value times `scale` to grid units; false when their squared norm passes limit.
bool quantize(const std::vector<Gathered>& gathered, double scale, double grid, Uint128 limit,
              std::vector<std::vector<std::int64_t>>& units) {
  Uint128 squared = 0;
  for (std::size_t t = 0; t < gathered.size(); ++t) {
    const std::vector<double>& values = gathered[t].values;
    units[t].resize(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto u = static_cast<std::int64_t>(std::trunc(values[i] * scale / grid));
      units[t][i] = u;
      const auto magnitude = static_cast<std::uint64_t>(u < 0 ? -u : u);
      squared += Uint128{magnitude} * magnitude;  // each term <= 2^104 and squared <= limit
      if (squared > limit) return false;
    }
  }
  return true;
}

// sqrt(squared_norm), or when the squares overflowed (finite values near 1e154 and up), the norm
// computed on values divided by the largest magnitude.
double l2_norm(const std::vector<Gathered>& gathered, double squared_norm) {
  if (std::isfinite(squared_norm)) return std::sqrt(squared_norm);
  double largest = 0;
  for (const Gathered& g : gathered) {
    for (double v : g.values) largest = std::max(largest, std::abs(v));
  }
  double scaled = 0;
  for (const Gathered& g : gathered) {
    for (double v : g.values) scaled += (v / largest) * (v / largest);
  }
  return largest * std::sqrt(scaled);
}

}  // namespace

std::int64_t max_units_per_coordinate(double clip_norm, double grid) {
  if (!(std::isfinite(clip_norm) && clip_norm > 0)) {
    throw InvalidInput("clip_norm: must be a finite number above 0, got " +
                       std::to_string(clip_norm));
  }
  int exponent = 0;
  if (!(std::isfinite(grid) && grid > 0 && std::frexp(grid, &exponent) == 0.5)) {
    throw InvalidInput("grid: must be a positive power of two, got " + std::to_string(grid));
  }
  const double units = clip_norm / grid;
  if (!(units <= std::ldexp(1.0, 52))) {
    throw InvalidInput("clip_norm: clip_norm / grid must be at most 2^52, got " +
                       std::to_string(units));
  }
  return static_cast<std::int64_t>(std::floor(units));
}

ClippedContribution clip_to_grid(const NamedTensors& update, const TensorLayouts& layouts,
                                 double clip_norm, double grid) {
  max_units_per_coordinate(clip_norm, grid);
  std::vector<Gathered> gathered;
  double squared_norm = 0;
  for (const auto& [name, tensor] : update) {
    const std::string context = "update['" + name + "']";
    const auto layout = layouts.find(name);
    if (layout == layouts.end()) {
      throw InvalidInput(context + ": the model has no tensor of this name");
    }
    const auto ordinal = static_cast<std::uint32_t>(std::distance(layouts.begin(), layout));
    gathered.push_back(
        gather(tensor, context, layout->second, row_split(name, layout->second), ordinal));
    for (double v : gathered.back().values) squared_norm += v * v;
  }
  const double norm = l2_norm(gathered, squared_norm);
  ClippedContribution out{{}, norm, norm > clip_norm};

  const Uint128 limit = squared_units_limit(clip_norm / grid);
  std::vector<std::vector<std::int64_t>> units(gathered.size());
  double scale = out.clipped ? clip_norm / norm : 1.0;
  // Shrinks by 2^-40, then 2^-39, ...: the first try almost always holds; by the 40th the scale
  // is 0 and the units are all zero, so the loop ends.
  for (int attempt = 0; !quantize(gathered, scale, grid, limit, units); ++attempt) {
    scale *= 1.0 - std::ldexp(1.0, std::min(attempt - 40, 0));
  }

  for (std::size_t t = 0; t < gathered.size(); ++t) {
    const Gathered& g = gathered[t];
    ContributionRows rows{g.tensor, g.row_size, {}, {}};
    for (std::size_t r = 0; r < g.rows.size(); ++r) {
      const auto first = units[t].begin() + static_cast<std::ptrdiff_t>(r * g.row_size);
      const auto last = first + static_cast<std::ptrdiff_t>(g.row_size);
      if (std::all_of(first, last, [](std::int64_t u) { return u == 0; })) continue;
      rows.rows.push_back(g.rows[r]);
      rows.units.insert(rows.units.end(), first, last);
    }
    if (!rows.rows.empty()) out.tensors.push_back(std::move(rows));
  }
  return out;
}

}  // namespace fedleaf::core
