// SparseSumAccumulator::prepare: validates one update against the accumulator's contract and
// turns it into keys, (coalesced) values and the operator's scaling, without changing the
// accumulator. Duplicates are summed here rather than with core/coalesce because the sums must
// be f64 in input order (the contract's arithmetic) and only the operators that need it pay.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/aggregation/accumulator/sparse_sum_accumulator.h"
#include "core/aggregation/accumulator/update_values.h"
#include "core/error.h"
#include "core/tensor/linear_index.h"
#include "core/text/text_format.h"

namespace fedleaf::core {
namespace {

// Euclidean norm without overflow for any finite input.
template <class T>
double l2_norm(const T* values, std::size_t count) {
  double sq = 0.0;
  for (std::size_t i = 0; i < count; ++i) sq += static_cast<double>(values[i]) * values[i];
  if (std::isfinite(sq)) return std::sqrt(sq);
  double largest = 0.0;
  for (std::size_t i = 0; i < count; ++i) largest = std::max(largest, std::abs(double(values[i])));
  double scaled = 0.0;
  for (std::size_t i = 0; i < count; ++i) {
    const double v = static_cast<double>(values[i]) / largest;
    scaled += v * v;
  }
  return largest * std::sqrt(scaled);
}

// Scales each row (of `width` values) whose L2 norm exceeds `bound` down to `bound`; returns how
// many it scaled.
std::uint64_t clip_rows(std::vector<double>& values, std::size_t width, double bound) {
  std::uint64_t clipped = 0;
  for (std::size_t at = 0; at + width <= values.size(); at += width) {
    double* row = values.data() + at;
    const double n = l2_norm(row, width);
    if (n > bound) {
      const double s = bound / n;
      for (std::size_t j = 0; j < width; ++j) row[j] *= s;
      ++clipped;
    }
  }
  return clipped;
}

}  // namespace

void SparseSumAccumulator::prepare(const Tensor& update, double weight, Prepared& out) const {
  const auto where = [&] { return "update " + in_quotes(name_); };  // built only to throw
  const UpdateEncoding encoding = update_encoding_of(update);
  if (encoding != encoding_) {
    throw InvalidInput(where() + ": encoding '" + std::string(update_encoding_name(encoding)) +
                       "' differs from the accumulator's '" +
                       std::string(update_encoding_name(encoding_)) + "'");
  }
  if (!(std::isfinite(weight) && weight > 0.0)) {
    throw InvalidInput(where() + ": weight " + format_double_exact(weight) +
                       " must be finite and > 0");
  }
  const DenseTensor& values = values_of(update);
  if (values.dtype() != dtype_) {
    throw InvalidInput(where() + ": dtype " + std::string(dtype_name(values.dtype())) +
                       " differs from the accumulator's " + std::string(dtype_name(dtype_)));
  }
  std::size_t entries = 0;
  bool same_shape = false;
  if (encoding_ == UpdateEncoding::kDense) {
    const Shape& s = values.shape();
    same_shape = std::equal(
        s.begin(), s.end(), dense_shape_.begin(), dense_shape_.end(),
        [](std::size_t a, std::int64_t b) { return a == static_cast<std::uint64_t>(b); });
    if (!same_shape) {
      throw InvalidInput(where() + ": dense_shape " + shape_to_string(s) +
                         " differs from the accumulator's " + shape_to_string(dense_shape_));
    }
  } else {
    const DenseShape& shape = encoding_ == UpdateEncoding::kCoo
                                  ? std::get<SparseTensor>(update).dense_shape()
                                  : std::get<RowSparseTensor>(update).dense_shape();
    if (shape != dense_shape_) {
      throw InvalidInput(where() + ": dense_shape " + shape_to_string(shape) +
                         " differs from the accumulator's " + shape_to_string(dense_shape_));
    }
    entries = encoding_ == UpdateEncoding::kCoo ? std::get<SparseTensor>(update).nnz()
                                                : std::get<RowSparseTensor>(update).num_rows();
  }
  // The product is checked first: on a 32-bit platform it could wrap around to values.size().
  const bool countable = width_ == 0 || entries <= std::numeric_limits<std::size_t>::max() / width_;
  const std::size_t expected_values = encoding_ == UpdateEncoding::kDense
                                          ? static_cast<std::size_t>(num_keys_)
                                          : (countable ? entries * width_ : 0);
  if (!countable || values.size() != expected_values) {
    throw InvalidInput(where() + ": holds " + std::to_string(values.size()) +
                       " values but its indices need " +
                       (countable ? std::to_string(expected_values)
                                  : std::to_string(entries) + " × " + std::to_string(width_)));
  }
  out.weight = weight;
  out.use_coalesced = false;
  out.rows_clipped = 0;
  out.key_data = nullptr;
  out.key_count = entries;
  // Keys. Index ranges are an invariant of SparseTensor / RowSparseTensor (their constructors
  // reject out-of-range indices and the indices cannot be changed afterwards), so indices are
  // non-negative and a rank-1 index array is its own key array.
  if (encoding_ == UpdateEncoding::kCoo && strides_.size() != 1) {
    const CooIndices& idx = std::get<SparseTensor>(update).indices();
    out.keys.resize(entries);
    for (std::size_t i = 0; i < entries; ++i) out.keys[i] = linear_index(idx, i, strides_);
    out.key_data = out.keys.data();
  } else if (encoding_ == UpdateEncoding::kCoo) {
    out.key_data =
        reinterpret_cast<const std::uint64_t*>(std::get<SparseTensor>(update).indices().data());
  } else if (encoding_ == UpdateEncoding::kRowSparse) {
    out.key_data =
        reinterpret_cast<const std::uint64_t*>(std::get<RowSparseTensor>(update).indices().data());
  }
  // A robust clip needs the norm of the tensor the update means, so it coalesces too.
  const bool robust_clip = spec_.clip.kind != ClipKind::kOff;
  const bool coalesce = needs_coalesced_input(spec_.op) || robust_clip;
  // Only operators that coalesce need to know; branch-free, so the scan vectorizes.
  bool canonical = true;
  if (coalesce) {
    for (std::size_t i = 1; i < out.key_count; ++i) {
      canonical &= out.key_data[i] > out.key_data[i - 1];
    }
  }
  // Finite values and the update's L2 norm (needed by clipping only).
  const bool clipping = robust_clip || operator_rules(spec_.op).clips_to_norm;
  double norm = 0.0;
  visit_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* v = values.data<T>();
      const std::size_t count = expected_values;
      // Branch-free scan first (it vectorizes); locate the culprit only when there is one.
      bool finite = true;
      for (std::size_t i = 0; i < count; ++i) finite &= std::isfinite(v[i]);
      if (!finite) {
        std::size_t i = 0;
        while (std::isfinite(v[i])) ++i;
        throw InvalidInput(where() + ": value " + std::to_string(i) +
                           " is not finite (NaN or infinity)");
      }
      if (!canonical && coalesce) {
        // Sum duplicates in f64, in input order, so a client counts once per key.
        std::vector<std::size_t> order(entries);
        std::iota(order.begin(), order.end(), std::size_t{0});
        const std::uint64_t* keys = out.key_data;
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
        std::vector<std::uint64_t> unique;
        out.coalesced.clear();
        for (std::size_t e : order) {
          const T* src = v + e * width_;
          if (unique.empty() || unique.back() != keys[e]) {
            unique.push_back(keys[e]);
            out.coalesced.insert(out.coalesced.end(), src, src + width_);
          } else {
            double* dst = out.coalesced.data() + out.coalesced.size() - width_;
            for (std::size_t j = 0; j < width_; ++j) dst[j] += static_cast<double>(src[j]);
          }
        }
        out.keys.swap(unique);
        out.key_data = out.keys.data();
        out.key_count = out.keys.size();
        out.use_coalesced = true;
        if (clipping) norm = l2_norm(out.coalesced.data(), out.coalesced.size());
      } else if (clipping) {
        norm = l2_norm(v, count);
      }
      if (spec_.row_clip > 0.0) {
        // Row clip (sparse_sum_operator.h): rows scaled in a copy, then the norm of the result.
        if (!out.use_coalesced) {
          out.coalesced.assign(v, v + count);
          out.use_coalesced = true;
        }
        out.rows_clipped = clip_rows(out.coalesced, width_,
                                     spec_.row_clip * spec_.clip.bound * std::sqrt(double(width_)));
        norm = l2_norm(out.coalesced.data(), out.coalesced.size());
      }
    }
  });
  // clip_norm is 0 for the operators that do not clip (the constructor sees to it).
  const UpdateScale scale = operator_rules(spec_.op).scale(weight, norm, spec_.clip_norm);
  out.value_scale = scale.values;
  out.contributor_weight = scale.contributors;
  out.clipped = operator_rules(spec_.op).clips_to_norm && norm > spec_.clip_norm;
  if (robust_clip) {
    // Values the update sent, after duplicates were summed: every element when dense.
    const double sent = encoding_ == UpdateEncoding::kDense
                            ? static_cast<double>(num_keys_)
                            : static_cast<double>(out.key_count) * static_cast<double>(width_);
    const double bound =
        spec_.clip.kind == ClipKind::kNorm ? spec_.clip.bound : spec_.clip.bound * std::sqrt(sent);
    if (norm > bound) {
      out.value_scale *= bound / norm;
      out.clipped = true;
    }
  }
}

}  // namespace fedleaf::core
