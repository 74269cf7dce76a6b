#include "core/train/compact_rows.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace fedleaf::core {

CompactRows::CompactRows(const std::vector<std::uint32_t>& ids, std::size_t vocab)
    : words_((vocab + 63) / 64) {
  for (std::uint32_t id : ids) {
    if (id >= vocab) {
      throw InvalidInput("ids: id " + std::to_string(id) + " is not below the vocabulary of " +
                         std::to_string(vocab));
    }
    words_[id / 64].present |= std::uint64_t{1} << (id % 64);
  }
  std::uint32_t count = 0;
  for (Word& word : words_) {
    word.rows_before = count;
    count += static_cast<std::uint32_t>(__builtin_popcountll(word.present));
  }
  count_ = count;
}

std::vector<std::uint32_t> CompactRows::rows() const {
  std::vector<std::uint32_t> out;
  out.reserve(count_);
  for (std::size_t w = 0; w < words_.size(); ++w) {
    for (std::uint64_t bits = words_[w].present; bits != 0; bits &= bits - 1) {
      out.push_back(static_cast<std::uint32_t>(w * 64 + __builtin_ctzll(bits)));
    }
  }
  return out;
}

std::size_t CompactRows::word_of(std::size_t r) const {
  // The last word with rows_before <= r: an empty word shares its count with the next word.
  const auto it =
      std::upper_bound(words_.begin(), words_.end(), static_cast<std::uint32_t>(r),
                       [](std::uint32_t row, const Word& word) { return row < word.rows_before; });
  return static_cast<std::size_t>(it - words_.begin()) - 1;
}

// x86-64's baseline has no popcount instruction: without one, __builtin_popcountll is a library
// call per id. Built twice, the loader picks the popcnt clone on CPUs that have it (all since
// 2008); results are the same integers either way.
#if defined(__x86_64__) && !defined(__POPCNT__) && !defined(__EMSCRIPTEN__) && \
    !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("popcnt", "default")))
#endif
void CompactRows::compact_all(const std::uint32_t* ids, std::size_t count,
                              std::uint32_t* out) const {
  for (std::size_t j = 0; j < count; ++j) out[j] = compact(ids[j]);
}

}  // namespace fedleaf::core
