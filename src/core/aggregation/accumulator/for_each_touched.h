// SparseSumAccumulator::for_each_touched, shared by finalize() and save(): both visit the
// touched keys once, in key order. Included only by the accumulator's own .cc files.
//
//   for_each_touched([&](std::uint64_t key, std::size_t pos) { out[e++] = sums_[pos]; });
#pragma once

#include <vector>

#include "core/aggregation/accumulator/prefetch.h"
#include "core/aggregation/accumulator/radix_sort_by_key.h"
#include "core/aggregation/accumulator/sparse_sum_accumulator.h"

namespace fedleaf::core {

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

}  // namespace fedleaf::core
