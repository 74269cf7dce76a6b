#include "core/data/compact_rows.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace fedleaf::core {
namespace {

struct RangeWord {
  std::uint64_t present = 0;
  std::uint32_t rows_before = 0;
};

// x86-64's baseline has no popcount instruction: without one, __builtin_popcountll is a library
// call per id. Built twice, the loader picks the popcnt clone on CPUs that have it (all since
// 2008); results are the same integers either way.
// Only with GCC: clang 14 emits no symbol for a target_clones member function, so a caller in
// another file fails to link (the clang-built fuzz targets).
#if defined(__x86_64__) && !defined(__POPCNT__) && !defined(__EMSCRIPTEN__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__clang__)
__attribute__((target_clones("popcnt", "default")))
#endif
void number_through_bitmap(const std::vector<RangeWord>& words, std::uint32_t* ids,
                           std::size_t count) {
  for (std::size_t j = 0; j < count; ++j) {
    const RangeWord& word = words[ids[j] / 64];
    const std::uint64_t below = word.present & ((std::uint64_t{1} << (ids[j] % 64)) - 1);
    ids[j] = word.rows_before + static_cast<std::uint32_t>(__builtin_popcountll(below));
  }
}

}  // namespace

CompactRows CompactRows::number_in_place(std::vector<std::uint32_t>& ids, std::size_t bound) {
  for (std::uint32_t id : ids) {
    if (id >= bound) {
      throw InvalidInput("ids: id " + std::to_string(id) + " is not below " +
                         std::to_string(bound));
    }
  }
  CompactRows out;
  const auto add_word = [&out](std::size_t number, std::uint64_t present) {
    out.words_.push_back(
        {present, static_cast<std::uint32_t>(out.count_), static_cast<std::uint32_t>(number)});
    out.count_ += static_cast<std::size_t>(__builtin_popcountll(present));
  };
  // 64 bits: a bound near 2^32 would wrap in a 32-bit size_t (wasm32).
  const std::uint64_t range_words = (std::uint64_t{bound} + 63) / 64;
  if (range_words <= ids.size()) {
    std::vector<RangeWord> range(static_cast<std::size_t>(range_words));
    for (std::uint32_t id : ids) range[id / 64].present |= std::uint64_t{1} << (id % 64);
    for (std::size_t w = 0; w < range.size(); ++w) {
      range[w].rows_before = static_cast<std::uint32_t>(out.count_);
      if (range[w].present != 0) add_word(w, range[w].present);
    }
    number_through_bitmap(range, ids.data(), ids.size());
    return out;
  }
  std::vector<std::uint32_t> sorted(ids);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (std::size_t k = 0; k < sorted.size();) {
    const std::size_t number = sorted[k] / 64;
    std::uint64_t present = 0;
    for (; k < sorted.size() && sorted[k] / 64 == number; ++k) {
      present |= std::uint64_t{1} << (sorted[k] % 64);
    }
    add_word(number, present);
  }
  for (std::uint32_t& id : ids) {
    id = static_cast<std::uint32_t>(std::lower_bound(sorted.begin(), sorted.end(), id) -
                                    sorted.begin());
  }
  return out;
}

CompactRows CompactRows::union_of(const std::vector<const CompactRows*>& sets,
                                  std::vector<std::vector<std::uint32_t>>* renumber) {
  std::vector<std::pair<std::uint32_t, std::uint64_t>> words;
  for (const CompactRows* set : sets) {
    for (const Word& w : set->words_) words.emplace_back(w.number, w.present);
  }
  std::sort(words.begin(), words.end());
  CompactRows out;
  for (std::size_t k = 0; k < words.size();) {
    const std::uint32_t number = words[k].first;
    std::uint64_t present = 0;
    for (; k < words.size() && words[k].first == number; ++k) present |= words[k].second;
    out.words_.push_back({present, static_cast<std::uint32_t>(out.count_), number});
    out.count_ += static_cast<std::size_t>(__builtin_popcountll(present));
  }
  if (renumber == nullptr) return out;
  renumber->assign(sets.size(), {});
  for (std::size_t s = 0; s < sets.size(); ++s) {
    std::vector<std::uint32_t>& map = (*renumber)[s];
    map.resize(sets[s]->size());
    // Both walks are in increasing row order: one pass over the union's words.
    std::size_t w = 0;
    sets[s]->for_each_row(0, sets[s]->size(), [&](std::size_t r, std::uint32_t global) {
      const std::uint32_t number = global / 64;
      while (out.words_[w].number != number) ++w;
      const std::uint64_t below = out.words_[w].present & ((std::uint64_t{1} << (global % 64)) - 1);
      map[r] = out.words_[w].rows_before + static_cast<std::uint32_t>(__builtin_popcountll(below));
    });
  }
  return out;
}

std::uint64_t CompactRows::end_row() const {
  if (words_.empty()) return 0;
  const Word& last = words_.back();
  return std::uint64_t{last.number} * 64 + 64 -
         static_cast<std::uint64_t>(__builtin_clzll(last.present));
}

std::vector<std::uint32_t> CompactRows::rows() const {
  std::vector<std::uint32_t> out;
  out.reserve(count_);
  for_each_row(0, count_, [&out](std::size_t, std::uint32_t global) { out.push_back(global); });
  return out;
}

std::size_t CompactRows::word_of(std::size_t r) const {
  const auto it =
      std::upper_bound(words_.begin(), words_.end(), static_cast<std::uint32_t>(r),
                       [](std::uint32_t row, const Word& word) { return row < word.rows_before; });
  return static_cast<std::size_t>(it - words_.begin()) - 1;
}

}  // namespace fedleaf::core
