#include "core/aggregation/accumulator/sparse_sum_accumulator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "core/aggregation/accumulator/huge_page_reserve.h"
#include "core/aggregation/accumulator/prefetch.h"
#include "core/aggregation/accumulator/update_values.h"
#include "core/error.h"
#include "core/tensor/linear_index.h"
#include "core/text/text_format.h"

namespace fedleaf::core {
namespace {

constexpr std::uint64_t kMaxKeys = std::uint64_t{1} << 63;

}  // namespace

SparseSumAccumulator::SparseSumAccumulator(std::string name, OperatorSpec spec,
                                           UpdateEncoding encoding, DType dtype,
                                           DenseShape dense_shape, AccumulatorOptions options)
    : name_(std::move(name)),
      spec_(spec),
      encoding_(encoding),
      dtype_(dtype),
      dense_shape_(std::move(dense_shape)),
      options_(options) {
  const std::string where = "accumulator " + in_quotes(name_);
  if (dtype_ != DType::F32 && dtype_ != DType::F64) {
    throw InvalidInput(where + ": dtype " + std::string(dtype_name(dtype_)) + " is not F32 or F64");
  }
  spec_ = check_operator_spec(spec_, encoding_, where);
  if (encoding_ == UpdateEncoding::kRowSparse && dense_shape_.empty()) {
    throw InvalidInput(where + ": a row_sparse tensor needs a dense_shape of rank >= 1");
  }
  // Dimensions are checked with zeros skipped, so no product below can overflow.
  std::uint64_t nonzero_product = 1;
  std::uint64_t elements = 1;
  std::uint64_t row_width = 1;
  for (std::size_t d = 0; d < dense_shape_.size(); ++d) {
    const std::int64_t dim = dense_shape_[d];
    if (dim < 0) {
      throw InvalidInput(where + ": dense_shape " + shape_to_string(dense_shape_) +
                         " has a negative dimension");
    }
    const auto u = static_cast<std::uint64_t>(dim);
    if (u == 0) {
      elements = 0;
      if (d > 0) row_width = 0;
      continue;
    }
    if (nonzero_product > (kMaxKeys - 1) / u) {
      throw InvalidInput(where + ": dense_shape " + shape_to_string(dense_shape_) +
                         " has 2^63 or more elements");
    }
    nonzero_product *= u;
    elements *= u;
    if (d > 0) row_width *= u;
  }
  strides_ = *row_major_strides(dense_shape_);
  constexpr std::uint64_t kMaxDoubles = std::numeric_limits<std::size_t>::max() / sizeof(double);
  if (encoding_ == UpdateEncoding::kRowSparse) {
    if (row_width > kMaxDoubles) {
      throw InvalidInput(where + ": dense_shape " + shape_to_string(dense_shape_) +
                         " has rows of " + std::to_string(row_width) +
                         " elements, more f64 sums than a " +
                         std::to_string(8 * sizeof(std::size_t)) + "-bit platform can address");
    }
    num_keys_ = static_cast<std::uint64_t>(dense_shape_[0]);
    width_ = static_cast<std::size_t>(row_width);
  } else {
    num_keys_ = elements;
    width_ = 1;
  }
  const bool dense_wanted =
      encoding_ == UpdateEncoding::kDense || options_.policy == RepresentationPolicy::kDense;
  if (dense_wanted && !dense_addressable()) {
    throw InvalidInput(where + ": dense_shape " + shape_to_string(dense_shape_) +
                       " has more elements than a dense f64 array can hold on a " +
                       std::to_string(8 * sizeof(std::size_t)) + "-bit platform");
  }
  if (encoding_ == UpdateEncoding::kDense) {
    representation_ = Representation::kDense;
    if (tracks_values(spec_.op)) {
      reserve_on_huge_pages(sums_, static_cast<std::size_t>(num_keys_));
      sums_.assign(static_cast<std::size_t>(num_keys_), 0.0);
    }
  } else if (options_.policy == RepresentationPolicy::kDense) {
    switch_to_dense();
  } else if (options_.expected_entries > 0) {
    plan_for(options_.expected_entries);
  }
  note_bytes();
}

void SparseSumAccumulator::check(const Tensor& update, double weight) const {
  Prepared scratch;
  prepare(update, weight, scratch);
}

void SparseSumAccumulator::check_and_keep(const Tensor& update, double weight) {
  kept_ = nullptr;
  prepare(update, weight, scratch_);
  kept_ = &update;
}

void SparseSumAccumulator::add_kept(const Tensor& update) {
  if (kept_ != &update) {
    throw std::logic_error("update " + in_quotes(name_) + ": add_kept without check_and_keep");
  }
  kept_ = nullptr;
  fold_prepared(update);
}

void SparseSumAccumulator::add(const Tensor& update, double weight) {
  kept_ = nullptr;
  prepare(update, weight, scratch_);
  fold_prepared(update);
}

void SparseSumAccumulator::fold_prepared(const Tensor& update) {
  if (num_updates_ == 0 && options_.expected_entries == 0 && options_.expected_updates > 0 &&
      representation_ == Representation::kSparse && map_.size() == 0) {
    const std::uint64_t per_update = scratch_.key_count;
    const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();
    plan_for(per_update != 0 && options_.expected_updates > limit / per_update
                 ? limit
                 : options_.expected_updates * per_update);
  }
  reserve_keys(scratch_.key_count);
  fold(update, scratch_);
}

void SparseSumAccumulator::fold(const Tensor& update, const Prepared& p) {
  ++num_updates_;
  if (p.clipped) ++num_clipped_;
  num_rows_clipped_ += p.rows_clipped;
  total_weight_ += p.weight;
  if (encoding_ == UpdateEncoding::kDense) {
    if (!tracks_values(spec_.op)) return;
    const DenseTensor& values = std::get<DenseTensor>(update);
    visit_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<T>) {
        const T* v = values.data<T>();
        double* sums = sums_.data();
        const double scale = p.value_scale;
        for (std::size_t i = 0; i < sums_.size(); ++i) sums[i] += scale * static_cast<double>(v[i]);
      }
    });
    return;
  }
  if (p.use_coalesced) {
    fold_entries(p.key_data, p.key_count, p.coalesced.data(), p.value_scale, p.contributor_weight);
    return;
  }
  const DenseTensor& values = values_of(update);
  visit_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      fold_entries(p.key_data, p.key_count, values.data<T>(), p.value_scale, p.contributor_weight);
    }
  });
}

template <class T>
void SparseSumAccumulator::fold_entries(const std::uint64_t* keys, std::size_t count,
                                        const T* values, double value_scale,
                                        double contributor_weight) {
  const bool with_values = tracks_values(spec_.op);
  const bool with_contributors = tracks_contributors(spec_.op);
  const bool with_reports = counts_reports();
  const std::size_t w = width_;
  // How far ahead the loops below prefetch: enough to overlap several cache misses.
  constexpr std::size_t kAhead = 16;
  if (representation_ == Representation::kDense) {
    // Keys are below num_keys_, which dense_addressable() bounds by size_t.
    double* sums = sums_.data();
    double* contributors = contributors_.data();
    double* reports = reports_.data();
    std::uint64_t* bits = touched_bits_.data();
    if (with_values && !with_contributors && w == 1) {
      // weighted_mean, sum, clipped_weighted_mean of coo updates: the hottest loop.
      for (std::size_t i = 0; i < count; ++i) {
        const auto key = static_cast<std::size_t>(keys[i]);
        if (i + kAhead < count)
          prefetch_for_write(sums + static_cast<std::size_t>(keys[i + kAhead]));
        sums[key] += value_scale * static_cast<double>(values[i]);
        bits[key >> 6] |= std::uint64_t{1} << (key & 63);
      }
      return;
    }
    for (std::size_t i = 0; i < count; ++i) {
      const auto key = static_cast<std::size_t>(keys[i]);
      if (with_values) {
        double* dst = sums + key * w;
        const T* src = values + i * w;
        for (std::size_t j = 0; j < w; ++j) dst[j] += value_scale * static_cast<double>(src[j]);
      }
      if (with_contributors) {
        contributors[key] += contributor_weight;
      } else {
        bits[key >> 6] |= std::uint64_t{1} << (key & 63);
      }
      if (with_reports) reports[key] += 1.0;
    }
    return;
  }
  // Sparse: reserve_keys() made room for every key, so appending a slot never reallocates and
  // the array pointers stay valid. A new slot starts from +0.0 like a dense one, so the result
  // is bitwise the same in either representation.
  for (std::size_t i = 0; i < count; ++i) {
    if (i + kAhead < count) map_.prefetch(keys[i + kAhead]);
    const std::uint64_t key = keys[i];
    const std::size_t slot = map_.find_or_insert(key);
    if (slot == slot_keys_.size()) append_slot(key);
    if (with_values) {
      double* dst = sums_.data() + slot * w;
      const T* src = values + i * w;
      for (std::size_t j = 0; j < w; ++j) dst[j] += value_scale * static_cast<double>(src[j]);
    }
    if (with_contributors) contributors_[slot] += contributor_weight;
    if (with_reports) reports_[slot] += 1.0;
  }
}

void SparseSumAccumulator::merge(const SparseSumAccumulator& other) {
  kept_ = nullptr;
  if (&other == this) {
    // `other` is *this, which merge() changes: fold a snapshot of it.
    const SparseSumAccumulator copy = other;  // NOLINT(performance-unnecessary-copy-initialization)
    merge(copy);
    return;
  }
  const std::string where = "merge into accumulator " + in_quotes(name_);
  if (other.spec_ != spec_) {
    throw InvalidInput(where + ": operator " + std::string(operator_name(other.spec_.op)) +
                       " (clip_norm " + format_double_exact(other.spec_.clip_norm) +
                       ") differs from this one's " + std::string(operator_name(spec_.op)) +
                       " (clip_norm " + format_double_exact(spec_.clip_norm) + ")");
  }
  if (other.encoding_ != encoding_) {
    throw InvalidInput(where + ": encoding '" + std::string(update_encoding_name(other.encoding_)) +
                       "' differs from this one's '" +
                       std::string(update_encoding_name(encoding_)) + "'");
  }
  if (other.dtype_ != dtype_) {
    throw InvalidInput(where + ": dtype " + std::string(dtype_name(other.dtype_)) +
                       " differs from this one's " + std::string(dtype_name(dtype_)));
  }
  if (other.dense_shape_ != dense_shape_) {
    throw InvalidInput(where + ": dense_shape " + shape_to_string(other.dense_shape_) +
                       " differs from this one's " + shape_to_string(dense_shape_));
  }
  const std::size_t w = width_;
  if (encoding_ != UpdateEncoding::kDense) {
    if (other.representation_ == Representation::kDense) {
      if (representation_ == Representation::kSparse) switch_to_dense();
      for (std::size_t i = 0; i < sums_.size(); ++i) sums_[i] += other.sums_[i];
      for (std::size_t i = 0; i < contributors_.size(); ++i) {
        contributors_[i] += other.contributors_[i];
      }
      for (std::size_t i = 0; i < reports_.size(); ++i) reports_[i] += other.reports_[i];
      for (std::size_t i = 0; i < touched_bits_.size(); ++i) {
        touched_bits_[i] |= other.touched_bits_[i];
      }
    } else {
      reserve_keys(other.slot_keys_.size());
      for (std::size_t slot = 0; slot < other.slot_keys_.size(); ++slot) {
        const std::size_t pos = position_for(other.slot_keys_[slot]);
        if (!sums_.empty()) {
          const double* src = other.sums_.data() + slot * w;
          double* dst = sums_.data() + pos * w;
          for (std::size_t j = 0; j < w; ++j) dst[j] += src[j];
        }
        if (!contributors_.empty()) contributors_[pos] += other.contributors_[slot];
        if (!reports_.empty()) reports_[pos] += other.reports_[slot];
      }
    }
  } else {
    for (std::size_t i = 0; i < sums_.size(); ++i) sums_[i] += other.sums_[i];
  }
  num_updates_ += other.num_updates_;
  num_clipped_ += other.num_clipped_;
  num_rows_clipped_ += other.num_rows_clipped_;
  total_weight_ += other.total_weight_;
}

}  // namespace fedleaf::core
