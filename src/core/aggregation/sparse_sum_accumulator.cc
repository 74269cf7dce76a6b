#include "core/aggregation/sparse_sum_accumulator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/linear_index.h"
#include "core/safetensors.h"
#include "core/text_format.h"

namespace fedleaf::core {
namespace {

constexpr std::uint64_t kMaxKeys = std::uint64_t{1} << 63;

double parse_double(const std::string& text, const std::string& what) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) {
    throw InvalidInput(what + " " + in_quotes(text) + " is not a number");
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) {
    throw InvalidInput(what + " " + in_quotes(text) + " is not a finite number");
  }
  return v;
}

std::uint64_t parse_count(const std::string& text, const std::string& what) {
  if (text.empty() || text.size() > 19 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw InvalidInput(what + " " + in_quotes(text) + " is not a non-negative integer");
  }
  return std::stoull(text);
}

std::string format_shape(const DenseShape& shape) {
  std::string out;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d) out += ',';
    out += std::to_string(shape[d]);
  }
  return out;
}

DenseShape parse_shape(const std::string& text, const std::string& what) {
  DenseShape shape;
  if (text.empty()) return shape;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t comma = text.find(',', begin);
    const std::string part = text.substr(begin, comma == std::string::npos ? comma : comma - begin);
    const std::uint64_t dim = parse_count(part, what + " dimension");
    if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw InvalidInput(what + " dimension " + part + " is too large");
    }
    shape.push_back(static_cast<std::int64_t>(dim));
    if (comma == std::string::npos) return shape;
    begin = comma + 1;
  }
}

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

// Hints the cache to load the line of `p` for writing; no effect on results.
inline void prefetch_for_write(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 1);
#else
  (void)p;
#endif
}

// A touched key and its slot in the sparse representation's arrays.
struct KeySlot {
  std::uint64_t key;
  std::size_t slot;
};

// Sorts by key (keys are distinct, all ≤ max_key): an LSD radix sort with digits of at most 11
// bits over the bits max_key needs, O(n) and sequential, for large n; std::sort below that.
void sort_by_key(std::vector<KeySlot>& items, std::uint64_t max_key) {
  if (items.size() < 4096) {
    std::sort(items.begin(), items.end(),
              [](const KeySlot& a, const KeySlot& b) { return a.key < b.key; });
    return;
  }
  unsigned bits = 1;
  while (bits < 64 && (std::uint64_t{1} << bits) <= max_key) ++bits;
  const unsigned passes = (bits + 10) / 11;
  const unsigned digit = (bits + passes - 1) / passes;
  const std::size_t buckets = std::size_t{1} << digit;
  const std::uint64_t mask = buckets - 1;
  std::vector<KeySlot> scratch(items.size());
  std::vector<std::size_t> start(buckets);
  for (unsigned pass = 0; pass < passes; ++pass) {
    const unsigned shift = pass * digit;
    std::fill(start.begin(), start.end(), 0);
    for (const KeySlot& item : items) ++start[static_cast<std::size_t>((item.key >> shift) & mask)];
    std::size_t sum = 0;
    for (std::size_t& s : start) {
      const std::size_t count = s;
      s = sum;
      sum += count;
    }
    for (const KeySlot& item : items) {
      scratch[start[static_cast<std::size_t>((item.key >> shift) & mask)]++] = item;
    }
    items.swap(scratch);
  }
}

// Hints the cache to load the line of `p` for reading; no effect on results.
inline void prefetch_for_read(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 0);
#else
  (void)p;
#endif
}

const DenseTensor& values_of(const Tensor& t) {
  if (const auto* d = std::get_if<DenseTensor>(&t)) return *d;
  if (const auto* s = std::get_if<SparseTensor>(&t)) return s->values();
  return std::get<RowSparseTensor>(t).values();
}

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
  if (spec_.op == SparseSumOperator::kClippedWeightedMean &&
      !(std::isfinite(spec_.clip_norm) && spec_.clip_norm > 0.0)) {
    throw InvalidInput(where + ": clipped_weighted_mean needs a finite clip_norm > 0");
  }
  if (spec_.op != SparseSumOperator::kClippedWeightedMean) spec_.clip_norm = 0.0;
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
    if (tracks_values(spec_.op)) sums_.assign(static_cast<std::size_t>(num_keys_), 0.0);
  } else if (options_.policy == RepresentationPolicy::kDense) {
    switch_to_dense();
  } else if (options_.expected_entries > 0) {
    plan_for(options_.expected_entries);
  }
  note_bytes();
}

bool SparseSumAccumulator::dense_addressable() const {
  const std::uint64_t per_key = std::max<std::uint64_t>(width_, 1) * sizeof(double);
  return num_keys_ <= std::numeric_limits<std::size_t>::max() / per_key;
}

void SparseSumAccumulator::plan_for(std::uint64_t expected_entries) {
  // Expected distinct keys of E uniform draws from K keys: K (1 - e^{-E/K}). Sizes are
  // estimated in double, so a huge hint cannot overflow size_t.
  const double keys = static_cast<double>(num_keys_);
  const double entries = static_cast<double>(expected_entries);
  const double touched = keys > 0 ? std::ceil(-keys * std::expm1(-entries / keys)) : 0.0;
  double table = 16.0;  // KeySlotMap::capacity_for in double
  while (table / 2 < touched) table *= 2;
  const double sparse = table * static_cast<double>(KeySlotMap::entry_bytes()) +
                        touched * static_cast<double>(slot_bytes());
  if (options_.policy == RepresentationPolicy::kAuto && dense_addressable() &&
      sparse >= static_cast<double>(dense_bytes())) {
    switch_to_dense();
    return;
  }
  // A projection beyond what this platform could hold is not acted upon: the table then grows
  // on demand as keys arrive.
  // The reservation adds four standard deviations (the variance of the distinct count is
  // below its mean), so that chance alone rarely makes the arrays grow again.
  const double limit = static_cast<double>(std::numeric_limits<std::size_t>::max() / 4);
  const double reserved = std::min({touched + std::ceil(4.0 * std::sqrt(touched)), entries, keys});
  if (sparse < limit) reserve_keys(static_cast<std::size_t>(reserved));
}

std::size_t SparseSumAccumulator::slot_bytes() const {
  return sizeof(std::uint64_t) + (tracks_values(spec_.op) ? sizeof(double) * width_ : 0) +
         (tracks_contributors(spec_.op) ? sizeof(double) : 0);
}

std::size_t SparseSumAccumulator::sparse_bytes(std::size_t table_capacity,
                                               std::size_t slot_capacity) const {
  return table_capacity * KeySlotMap::entry_bytes() + slot_capacity * slot_bytes();
}

std::size_t SparseSumAccumulator::dense_bytes() const {
  // Saturates instead of overflowing: such a dense array could never be allocated anyway.
  const double keys = static_cast<double>(num_keys_);
  double bytes = keys * ((tracks_values(spec_.op) ? 8.0 * static_cast<double>(width_) : 0.0) +
                         (tracks_contributors(spec_.op) ? 8.0 : 0.0));
  if (!tracks_contributors(spec_.op)) bytes += std::ceil(keys / 64.0) * 8.0;
  const double limit = static_cast<double>(std::numeric_limits<std::size_t>::max() / 2);
  return bytes >= limit ? std::numeric_limits<std::size_t>::max() / 2
                        : static_cast<std::size_t>(bytes);
}

std::size_t SparseSumAccumulator::state_bytes() const {
  return (sums_.capacity() + contributors_.capacity() + slot_keys_.capacity() +
          touched_bits_.capacity()) *
             8 +
         map_.bytes();
}

void SparseSumAccumulator::note_bytes(std::size_t transient_extra) {
  peak_bytes_ = std::max(peak_bytes_, state_bytes() + transient_extra);
}

std::uint64_t SparseSumAccumulator::num_touched() const {
  if (encoding_ == UpdateEncoding::kDense) return num_keys_;
  if (representation_ == Representation::kSparse) return map_.size();
  std::uint64_t n = 0;
  if (tracks_contributors(spec_.op)) {
    for (double c : contributors_) n += c > 0.0 ? 1 : 0;
  } else {
    for (std::uint64_t word : touched_bits_)
      n += static_cast<std::uint64_t>(__builtin_popcountll(word));
  }
  return n;
}

void SparseSumAccumulator::reserve_keys(std::size_t extra) {
  if (representation_ == Representation::kDense) return;
  const std::size_t needed = map_.size() + extra;
  std::size_t table = map_.capacity();
  if (table < KeySlotMap::capacity_for(needed)) table = KeySlotMap::capacity_for(needed);
  std::size_t slots = slot_keys_.capacity();
  if (slots < needed) slots = std::max(needed, 2 * slots);
  if (table == map_.capacity() && slots == slot_keys_.capacity()) return;
  if (options_.policy == RepresentationPolicy::kAuto && dense_addressable() &&
      sparse_bytes(table, slots) >= dense_bytes()) {
    switch_to_dense();
    return;
  }
  // Each step either completes or leaves the contents as they were (capacity aside).
  if (table != map_.capacity()) {
    const std::size_t old = map_.bytes();
    map_.rehash(table);
    note_bytes(old);
  }
  const auto grow = [&](auto& v, std::size_t count) {
    if (v.capacity() >= count) return;
    const std::size_t old = v.capacity() * sizeof(v[0]);
    v.reserve(count);
    note_bytes(old);
  };
  grow(slot_keys_, slots);
  if (tracks_values(spec_.op)) grow(sums_, slots * width_);
  if (tracks_contributors(spec_.op)) grow(contributors_, slots);
}

void SparseSumAccumulator::switch_to_dense() {
  const auto keys = static_cast<std::size_t>(num_keys_);
  std::vector<double> sums;
  std::vector<double> contributors;
  std::vector<std::uint64_t> bits;
  if (tracks_values(spec_.op)) sums.assign(keys * width_, 0.0);
  if (tracks_contributors(spec_.op)) {
    contributors.assign(keys, 0.0);
  } else {
    bits.assign((keys + 63) / 64, 0);
  }
  const std::size_t fresh_bytes = (sums.capacity() + contributors.capacity() + bits.capacity()) * 8;
  for (std::size_t slot = 0; slot < slot_keys_.size(); ++slot) {
    // Keys are below num_keys_, which dense_addressable() bounds by size_t.
    const auto key = static_cast<std::size_t>(slot_keys_[slot]);
    if (!sums.empty()) {
      std::copy_n(sums_.data() + slot * width_, width_, sums.data() + key * width_);
    }
    if (!contributors.empty()) contributors[key] = contributors_[slot];
    if (!bits.empty()) bits[key >> 6] |= std::uint64_t{1} << (key & 63);
  }
  note_bytes(fresh_bytes);
  sums_.swap(sums);
  contributors_.swap(contributors);
  touched_bits_.swap(bits);
  map_.clear();
  std::vector<std::uint64_t>().swap(slot_keys_);
  representation_ = Representation::kDense;
}

std::size_t SparseSumAccumulator::position_for(std::uint64_t key) {
  if (representation_ == Representation::kDense) {
    const auto at = static_cast<std::size_t>(key);  // < num_keys_, bounded by dense_addressable()
    if (!touched_bits_.empty()) touched_bits_[at >> 6] |= std::uint64_t{1} << (at & 63);
    return at;
  }
  const std::size_t slot = map_.find_or_insert(key);
  if (slot == slot_keys_.size()) append_slot(key);
  return slot;
}

void SparseSumAccumulator::append_slot(std::uint64_t key) {
  slot_keys_.push_back(key);
  if (tracks_values(spec_.op)) sums_.resize(sums_.size() + width_, 0.0);
  if (tracks_contributors(spec_.op)) contributors_.push_back(0.0);
}

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
  // Only operators that coalesce need to know; branch-free, so the scan vectorizes.
  bool canonical = true;
  if (needs_coalesced_input(spec_.op)) {
    for (std::size_t i = 1; i < out.key_count; ++i) {
      canonical &= out.key_data[i] > out.key_data[i - 1];
    }
  }
  // Finite values and the update's L2 norm (needed by clipping only).
  const bool clipping = spec_.op == SparseSumOperator::kClippedWeightedMean;
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
      if (!canonical && needs_coalesced_input(spec_.op)) {
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
    }
  });
  switch (spec_.op) {
    case SparseSumOperator::kSum:
      out.value_scale = 1.0;
      out.contributor_weight = 0.0;
      break;
    case SparseSumOperator::kWeightedMean:
      out.value_scale = weight;
      out.contributor_weight = 0.0;
      break;
    case SparseSumOperator::kMeanOverContributors:
      out.value_scale = weight;
      out.contributor_weight = weight;
      break;
    case SparseSumOperator::kCount:
      out.value_scale = 0.0;
      out.contributor_weight = 1.0;
      break;
    case SparseSumOperator::kClippedWeightedMean:
      out.value_scale = norm > spec_.clip_norm ? weight * (spec_.clip_norm / norm) : weight;
      out.contributor_weight = 0.0;
      break;
  }
}

void SparseSumAccumulator::check(const Tensor& update, double weight) const {
  Prepared scratch;
  prepare(update, weight, scratch);
}

void SparseSumAccumulator::add(const Tensor& update, double weight) {
  prepare(update, weight, scratch_);
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
  const std::size_t w = width_;
  // How far ahead the loops below prefetch: enough to overlap several cache misses.
  constexpr std::size_t kAhead = 16;
  if (representation_ == Representation::kDense) {
    // Keys are below num_keys_, which dense_addressable() bounds by size_t.
    double* sums = sums_.data();
    double* contributors = contributors_.data();
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
  }
}

void SparseSumAccumulator::merge(const SparseSumAccumulator& other) {
  if (&other == this) {
    const SparseSumAccumulator copy = other;
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
      }
    }
  } else {
    for (std::size_t i = 0; i < sums_.size(); ++i) sums_[i] += other.sums_[i];
  }
  num_updates_ += other.num_updates_;
  total_weight_ += other.total_weight_;
}

template <class Visit>
void SparseSumAccumulator::for_each_touched(Visit&& visit) const {
  if (representation_ == Representation::kSparse) {
    std::vector<KeySlot> order(slot_keys_.size());
    for (std::size_t s = 0; s < order.size(); ++s) order[s] = KeySlot{slot_keys_[s], s};
    sort_by_key(order, num_keys_ > 0 ? num_keys_ - 1 : 0);
    // Sorted keys visit the slots in random order: prefetch the rows a few keys ahead.
    constexpr std::size_t kAhead = 8;
    const std::size_t row_bytes = width_ * sizeof(double);
    for (std::size_t e = 0; e < order.size(); ++e) {
      if (e + kAhead < order.size() && !sums_.empty()) {
        const auto* row =
            reinterpret_cast<const char*>(sums_.data() + order[e + kAhead].slot * width_);
        for (std::size_t b = 0; b < row_bytes; b += 64) prefetch_for_read(row + b);
      }
      visit(order[e].key, order[e].slot);
    }
    return;
  }
  // Dense: keys are below num_keys_, which dense_addressable() bounds by size_t.
  if (tracks_contributors(spec_.op)) {
    const double* contributors = contributors_.data();
    for (std::size_t k = 0; k < contributors_.size(); ++k) {
      if (contributors[k] > 0.0) visit(std::uint64_t{k}, k);
    }
    return;
  }
  // Word by word: a word with no touched key costs one test.
  for (std::size_t word = 0; word < touched_bits_.size(); ++word) {
    for (std::uint64_t bits = touched_bits_[word]; bits; bits &= bits - 1) {
      const std::size_t key = word * 64 + static_cast<std::size_t>(__builtin_ctzll(bits));
      visit(std::uint64_t{key}, key);
    }
  }
}

Tensor SparseSumAccumulator::finalize() const {
  // How a stored key becomes its result, decided once rather than per element.
  enum class Rule { kSums, kSumsOverTotal, kSumsOverContributors, kContributors, kUpdates };
  Rule rule = Rule::kSums;
  switch (spec_.op) {
    case SparseSumOperator::kSum:
      rule = Rule::kSums;
      break;
    case SparseSumOperator::kWeightedMean:
    case SparseSumOperator::kClippedWeightedMean:
      rule = Rule::kSumsOverTotal;
      break;
    case SparseSumOperator::kMeanOverContributors:
      rule =
          encoding_ == UpdateEncoding::kDense ? Rule::kSumsOverTotal : Rule::kSumsOverContributors;
      break;
    case SparseSumOperator::kCount:
      rule = encoding_ == UpdateEncoding::kDense ? Rule::kUpdates : Rule::kContributors;
      break;
  }
  const std::size_t w = width_;
  const double* sums = sums_.data();
  const double* contributors = contributors_.data();
  // With no updates every sum is zero, and zero divided by one is the zero the result needs.
  const double total = total_weight_ > 0.0 ? total_weight_ : 1.0;
  const std::uint64_t updates = num_updates_;
  // One pass over the touched keys writes indices and values; T and R are fixed per loop.
  const auto build = [&](auto tag, auto rule_constant) -> Tensor {
    using T = decltype(tag);
    constexpr Rule kRule = decltype(rule_constant)::value;
    const auto write_row = [&](T* dst, std::size_t pos) {
      const double* in = sums + pos * w;
      if constexpr (kRule == Rule::kSums) {
        for (std::size_t j = 0; j < w; ++j) dst[j] = static_cast<T>(in[j]);
      } else if constexpr (kRule == Rule::kSumsOverTotal) {
        for (std::size_t j = 0; j < w; ++j) dst[j] = static_cast<T>(in[j] / total);
      } else if constexpr (kRule == Rule::kSumsOverContributors) {
        const double divisor = contributors[pos];
        for (std::size_t j = 0; j < w; ++j) dst[j] = static_cast<T>(in[j] / divisor);
      } else if constexpr (kRule == Rule::kContributors) {
        std::fill_n(dst, w, static_cast<T>(contributors[pos]));
      } else {
        std::fill_n(dst, w, static_cast<T>(updates));
      }
    };
    if (encoding_ == UpdateEncoding::kDense) {
      xt::xarray<T> out =
          xt::xarray<T>::from_shape(Shape(dense_shape_.begin(), dense_shape_.end()));
      T* dst = out.data();
      const auto n = static_cast<std::size_t>(num_keys_);  // checked by the constructor
      for (std::size_t k = 0; k < n; ++k) write_row(dst + k, k);
      return DenseTensor(std::move(out));
    }
    const auto n = static_cast<std::size_t>(num_touched());  // touched keys are in memory
    Shape value_shape{n};
    for (std::size_t d = 1; encoding_ == UpdateEncoding::kRowSparse && d < dense_shape_.size();
         ++d) {
      value_shape.push_back(static_cast<std::size_t>(dense_shape_[d]));
    }
    xt::xarray<T> values = xt::xarray<T>::from_shape(value_shape);
    T* dst = values.data();
    const bool coo = encoding_ == UpdateEncoding::kCoo;
    const std::size_t rank = coo ? dense_shape_.size() : 1;
    CooIndices coo_indices = CooIndices::from_shape({coo ? n : 0, rank});
    RowIndices row_indices = RowIndices::from_shape({coo ? 0 : n});
    std::int64_t* idx = coo ? coo_indices.data() : row_indices.data();
    std::size_t e = 0;
    for_each_touched([&](std::uint64_t key, std::size_t pos) {
      if (rank == 1) {
        idx[e] = static_cast<std::int64_t>(key);
      } else {
        std::uint64_t rest = key;
        for (std::size_t d = 0; d < rank; ++d) {
          idx[e * rank + d] = static_cast<std::int64_t>(rest / strides_[d]);
          rest %= strides_[d];
        }
      }
      write_row(dst + e * w, pos);
      ++e;
    });
    if (coo) {
      return SparseTensor(std::move(coo_indices), DenseTensor(std::move(values)), dense_shape_,
                          "aggregate " + in_quotes(name_));
    }
    return RowSparseTensor(std::move(row_indices), DenseTensor(std::move(values)), dense_shape_,
                           "aggregate " + in_quotes(name_));
  };
  if (spec_.op == SparseSumOperator::kCount) {
    return rule == Rule::kUpdates
               ? build(std::int64_t{}, std::integral_constant<Rule, Rule::kUpdates>{})
               : build(std::int64_t{}, std::integral_constant<Rule, Rule::kContributors>{});
  }
  const auto with_rule = [&](auto tag) -> Tensor {
    switch (rule) {
      case Rule::kSums:
        return build(tag, std::integral_constant<Rule, Rule::kSums>{});
      case Rule::kSumsOverContributors:
        return build(tag, std::integral_constant<Rule, Rule::kSumsOverContributors>{});
      default:
        return build(tag, std::integral_constant<Rule, Rule::kSumsOverTotal>{});
    }
  };
  return dtype_ == DType::F64 ? with_rule(double{}) : with_rule(float{});
}

void SparseSumAccumulator::save(const std::string& prefix, NamedTensors& tensors,
                                Metadata& metadata) const {
  metadata[prefix + "@operator"] = std::string(operator_name(spec_.op));
  if (spec_.op == SparseSumOperator::kClippedWeightedMean) {
    metadata[prefix + "@clip_norm"] = format_double_exact(spec_.clip_norm);
  }
  metadata[prefix + "@encoding"] = std::string(update_encoding_name(encoding_));
  metadata[prefix + "@dtype"] = std::string(dtype_name(dtype_));
  metadata[prefix + "@dense_shape"] = format_shape(dense_shape_);
  metadata[prefix + "@num_updates"] = std::to_string(num_updates_);
  metadata[prefix + "@total_weight"] = format_double_exact(total_weight_);
  if (encoding_ == UpdateEncoding::kDense) {
    if (tracks_values(spec_.op)) {
      xt::xarray<double> sums = xt::xarray<double>::from_shape({sums_.size()});
      std::copy(sums_.begin(), sums_.end(), sums.begin());
      tensors.insert_or_assign(prefix + "@sums", DenseTensor(std::move(sums)));
    }
    return;
  }
  const auto n = static_cast<std::size_t>(num_touched());  // touched keys are in memory
  xt::xarray<std::int64_t> keys = xt::xarray<std::int64_t>::from_shape({n});
  xt::xarray<double> sums =
      xt::xarray<double>::from_shape({tracks_values(spec_.op) ? n : 0, width_});
  xt::xarray<double> contributors =
      xt::xarray<double>::from_shape({tracks_contributors(spec_.op) ? n : 0});
  std::size_t e = 0;
  for_each_touched([&](std::uint64_t key, std::size_t pos) {
    keys(e) = static_cast<std::int64_t>(key);
    if (tracks_values(spec_.op)) {
      std::copy_n(sums_.data() + pos * width_, width_, sums.data() + e * width_);
    }
    if (tracks_contributors(spec_.op)) contributors(e) = contributors_[pos];
    ++e;
  });
  tensors.insert_or_assign(prefix + "@keys", DenseTensor(std::move(keys)));
  if (tracks_values(spec_.op)) {
    tensors.insert_or_assign(prefix + "@sums", DenseTensor(std::move(sums)));
  }
  if (tracks_contributors(spec_.op)) {
    tensors.insert_or_assign(prefix + "@contributors", DenseTensor(std::move(contributors)));
  }
}

SparseSumAccumulator SparseSumAccumulator::load(const std::string& prefix,
                                                const NamedTensors& tensors,
                                                const Metadata& metadata,
                                                AccumulatorOptions options) {
  const std::string where = "checkpoint of accumulator " + in_quotes(prefix);
  const auto meta = [&](const std::string& key) -> const std::string& {
    const auto it = metadata.find(prefix + "@" + key);
    if (it == metadata.end()) {
      throw InvalidInput(where + ": metadata " + in_quotes(prefix + "@" + key) + " is missing");
    }
    return it->second;
  };
  std::optional<double> clip;
  if (metadata.count(prefix + "@clip_norm")) {
    clip = parse_double(meta("clip_norm"), where + ": clip_norm");
  }
  const OperatorSpec spec = parse_operator_spec(meta("operator"), clip, where);
  const UpdateEncoding encoding = parse_update_encoding(meta("encoding"), where);
  const DType dtype = parse_dtype(meta("dtype"), where + ": dtype");
  DenseShape shape = parse_shape(meta("dense_shape"), where + ": dense_shape");
  const std::uint64_t num_updates = parse_count(meta("num_updates"), where + ": num_updates");
  const double total_weight = parse_double(meta("total_weight"), where + ": total_weight");
  if (total_weight < 0.0 || (num_updates == 0) != (total_weight == 0.0)) {
    throw InvalidInput(where + ": total_weight " + format_double_exact(total_weight) +
                       " is inconsistent with num_updates " + std::to_string(num_updates) +
                       " (must be > 0 exactly when there are updates)");
  }
  SparseSumAccumulator acc(prefix, spec, encoding, dtype, std::move(shape), options);
  const auto array = [&](const std::string& suffix, DType want, const Shape& want_shape) {
    const auto it = tensors.find(prefix + suffix);
    if (it == tensors.end()) {
      throw InvalidInput(where + ": tensor " + in_quotes(prefix + suffix) + " is missing");
    }
    const auto* t = std::get_if<DenseTensor>(&it->second);
    if (!t || t->dtype() != want || t->shape() != want_shape) {
      throw InvalidInput(where + ": tensor " + in_quotes(prefix + suffix) + " must be a dense " +
                         std::string(dtype_name(want)) + " array of shape " +
                         shape_to_string(want_shape));
    }
    return t;
  };
  const auto require_finite = [&](const double* v, std::size_t count, const std::string& what) {
    for (std::size_t i = 0; i < count; ++i) {
      if (!std::isfinite(v[i])) {
        throw InvalidInput(where + ": " + what + " value " + std::to_string(i) + " is not finite");
      }
    }
  };
  const bool with_values = tracks_values(spec.op);
  const bool with_contributors = tracks_contributors(spec.op);
  if (encoding == UpdateEncoding::kDense) {
    if (with_values) {
      const DenseTensor* sums =
          array("@sums", DType::F64, Shape{static_cast<std::size_t>(acc.num_keys_)});
      require_finite(sums->data<double>(), sums->size(), "sums");
      std::copy_n(sums->data<double>(), sums->size(), acc.sums_.begin());
    }
  } else {
    const auto it = tensors.find(prefix + "@keys");
    const auto* key_tensor = it == tensors.end() ? nullptr : std::get_if<DenseTensor>(&it->second);
    if (!key_tensor || key_tensor->dtype() != DType::I64 || key_tensor->rank() != 1) {
      throw InvalidInput(where + ": tensor " + in_quotes(prefix + "@keys") +
                         " must be a dense I64 array of shape [n]");
    }
    const std::size_t n = key_tensor->size();
    const std::int64_t* keys = key_tensor->data<std::int64_t>();
    if (num_updates == 0 && n > 0) {
      throw InvalidInput(where + ": holds " + std::to_string(n) + " keys but no updates");
    }
    for (std::size_t e = 0; e < n; ++e) {
      if (keys[e] < 0 || static_cast<std::uint64_t>(keys[e]) >= acc.num_keys_) {
        throw InvalidInput(where + ": key " + std::to_string(keys[e]) + " is out of range [0, " +
                           std::to_string(acc.num_keys_) + ")");
      }
      if (e > 0 && keys[e] <= keys[e - 1]) {
        throw InvalidInput(where + ": keys are not sorted and unique at entry " +
                           std::to_string(e));
      }
    }
    const double* sums = nullptr;
    if (with_values) {
      sums = array("@sums", DType::F64, Shape{n, acc.width_})->data<double>();
      require_finite(sums, n * acc.width_, "sums");
    }
    const double* contributors = nullptr;
    if (with_contributors) {
      contributors = array("@contributors", DType::F64, Shape{n})->data<double>();
      require_finite(contributors, n, "contributors");
      for (std::size_t e = 0; e < n; ++e) {
        const double c = contributors[e];
        const bool counted =
            spec.op == SparseSumOperator::kCount
                ? c >= 1.0 && c == std::floor(c) && c <= static_cast<double>(num_updates)
                : c > 0.0;
        if (!counted) {
          throw InvalidInput(where + ": contributor weight " + format_double_exact(c) + " of key " +
                             std::to_string(keys[e]) + " is impossible for " +
                             std::to_string(num_updates) + " updates");
        }
      }
    }
    acc.reserve_keys(n);
    for (std::size_t e = 0; e < n; ++e) {
      const std::size_t pos = acc.position_for(static_cast<std::uint64_t>(keys[e]));
      if (sums) std::copy_n(sums + e * acc.width_, acc.width_, acc.sums_.data() + pos * acc.width_);
      if (contributors) acc.contributors_[pos] = contributors[e];
    }
  }
  acc.num_updates_ = num_updates;
  acc.total_weight_ = total_weight;
  acc.note_bytes();
  return acc;
}

std::vector<std::uint8_t> SparseSumAccumulator::to_safetensors() const {
  NamedTensors tensors;
  Metadata metadata{{"accumulator", name_}};
  save(name_, tensors, metadata);
  return write_safetensors(tensors, metadata);
}

SparseSumAccumulator SparseSumAccumulator::from_safetensors(const std::uint8_t* data,
                                                            std::size_t size,
                                                            AccumulatorOptions options) {
  SafetensorsReadOptions read;
  read.require_finite = true;
  const SafetensorsFile file = read_safetensors(data, size, read);
  const auto it = file.metadata.find("accumulator");
  if (it == file.metadata.end()) {
    throw InvalidInput("accumulator checkpoint: metadata 'accumulator' (its name) is missing");
  }
  for (const auto& [tensor_name, tensor] : file.tensors) {
    if (tensor_name != it->second + "@keys" && tensor_name != it->second + "@sums" &&
        tensor_name != it->second + "@contributors") {
      throw InvalidInput("accumulator checkpoint: unexpected tensor " + in_quotes(tensor_name));
    }
  }
  return load(it->second, file.tensors, file.metadata, options);
}

}  // namespace fedleaf::core
