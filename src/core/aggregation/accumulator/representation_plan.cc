// SparseSumAccumulator's choice and upkeep of its representation (sparse table or dense arrays):
// planning from a size hint, growing, switching to dense, byte accounting.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/aggregation/accumulator/huge_page_reserve.h"
#include "core/aggregation/accumulator/sparse_sum_accumulator.h"

namespace fedleaf::core {

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
  const double limit = static_cast<double>(std::numeric_limits<std::size_t>::max()) / 4;
  const double reserved = std::min({touched + std::ceil(4.0 * std::sqrt(touched)), entries, keys});
  if (sparse < limit) reserve_keys(static_cast<std::size_t>(reserved));
}

std::size_t SparseSumAccumulator::slot_bytes() const {
  return sizeof(std::uint64_t) + (tracks_values(spec_.op) ? sizeof(double) * width_ : 0) +
         (tracks_contributors(spec_.op) ? sizeof(double) : 0) +
         (counts_reports() ? sizeof(double) : 0);
}

std::size_t SparseSumAccumulator::sparse_bytes(std::size_t table_capacity,
                                               std::size_t slot_capacity) const {
  return table_capacity * KeySlotMap::entry_bytes() + slot_capacity * slot_bytes();
}

std::size_t SparseSumAccumulator::dense_bytes() const {
  // Saturates instead of overflowing: such a dense array could never be allocated anyway.
  const double keys = static_cast<double>(num_keys_);
  double bytes =
      keys * ((tracks_values(spec_.op) ? 8.0 * static_cast<double>(width_) : 0.0) +
              (tracks_contributors(spec_.op) ? 8.0 : 0.0) + (counts_reports() ? 8.0 : 0.0));
  if (!tracks_contributors(spec_.op)) bytes += std::ceil(keys / 64.0) * 8.0;
  const double limit = static_cast<double>(std::numeric_limits<std::size_t>::max()) / 2;
  return bytes >= limit ? std::numeric_limits<std::size_t>::max() / 2
                        : static_cast<std::size_t>(bytes);
}

std::size_t SparseSumAccumulator::state_bytes() const {
  return (sums_.capacity() + contributors_.capacity() + reports_.capacity() +
          slot_keys_.capacity() + touched_bits_.capacity()) *
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

std::uint64_t SparseSumAccumulator::num_withheld() const {
  if (spec_.min_contributors <= 1) return 0;
  if (encoding_ == UpdateEncoding::kDense) {
    return num_updates_ > 0 && num_updates_ < spec_.min_contributors ? num_keys_ : 0;
  }
  // A touched key has a report count >= 1 in either representation; an untouched one 0.
  const auto k = static_cast<double>(spec_.min_contributors);
  std::uint64_t n = 0;
  for (double r : reports_) n += r > 0.0 && r < k ? 1 : 0;
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
    reserve_on_huge_pages(v, count);
    note_bytes(old);
  };
  grow(slot_keys_, slots);
  if (tracks_values(spec_.op)) grow(sums_, slots * width_);
  if (tracks_contributors(spec_.op)) grow(contributors_, slots);
  if (counts_reports()) grow(reports_, slots);
}

void SparseSumAccumulator::switch_to_dense() {
  const auto keys = static_cast<std::size_t>(num_keys_);
  std::vector<double> sums;
  std::vector<double> contributors;
  std::vector<double> reports;
  std::vector<std::uint64_t> bits;
  const auto zeroed = [](auto& v, std::size_t count) {
    reserve_on_huge_pages(v, count);
    v.assign(count, 0);
  };
  if (tracks_values(spec_.op)) zeroed(sums, keys * width_);
  if (counts_reports()) zeroed(reports, keys);
  if (tracks_contributors(spec_.op)) {
    zeroed(contributors, keys);
  } else {
    zeroed(bits, (keys + 63) / 64);
  }
  const std::size_t fresh_bytes =
      (sums.capacity() + contributors.capacity() + reports.capacity() + bits.capacity()) * 8;
  for (std::size_t slot = 0; slot < slot_keys_.size(); ++slot) {
    // Keys are below num_keys_, which dense_addressable() bounds by size_t.
    const auto key = static_cast<std::size_t>(slot_keys_[slot]);
    if (!sums.empty()) {
      std::copy_n(sums_.data() + slot * width_, width_, sums.data() + key * width_);
    }
    if (!contributors.empty()) contributors[key] = contributors_[slot];
    if (!reports.empty()) reports[key] = reports_[slot];
    if (!bits.empty()) bits[key >> 6] |= std::uint64_t{1} << (key & 63);
  }
  note_bytes(fresh_bytes);
  sums_.swap(sums);
  contributors_.swap(contributors);
  reports_.swap(reports);
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
  if (counts_reports()) reports_.push_back(0.0);
}

}  // namespace fedleaf::core
