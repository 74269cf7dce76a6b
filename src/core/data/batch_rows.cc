#include "core/data/batch_rows.h"

namespace fedleaf::core {

// x86-64's baseline has no popcount instruction (as in CompactRows::number_in_place): the loader
// picks the popcnt clone on CPUs that have it; the numbers are the same either way.
// Only with GCC: clang 14 emits no symbol for a target_clones member function, so a caller in
// another file fails to link (the clang-built fuzz targets).
#if defined(__x86_64__) && !defined(__POPCNT__) && !defined(__EMSCRIPTEN__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__clang__)
__attribute__((target_clones("popcnt", "default")))
#endif
void BatchRows::number(const std::uint32_t* ids, std::size_t count, std::size_t table_rows,
                       std::vector<std::uint32_t>& rows, std::uint32_t* slots) {
  const std::size_t words = (table_rows + 63) / 64;
  if (present_.size() != words) {
    present_.assign(words, 0);
    rows_before_.assign(words, 0);
    nonempty_.assign((words + 63) / 64, 0);
  }
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint32_t id = ids[j];
    present_[id / 64] |= std::uint64_t{1} << (id % 64);
    nonempty_[id / 4096] |= std::uint64_t{1} << (id / 64 % 64);
  }
  rows.clear();
  std::uint32_t rank = 0;
  for (std::size_t s = 0; s < nonempty_.size(); ++s) {
    for (std::uint64_t words_set = nonempty_[s]; words_set != 0; words_set &= words_set - 1) {
      const std::size_t w = s * 64 + static_cast<std::size_t>(__builtin_ctzll(words_set));
      rows_before_[w] = rank;
      for (std::uint64_t bits = present_[w]; bits != 0; bits &= bits - 1) {
        rows.push_back(static_cast<std::uint32_t>(w * 64 + __builtin_ctzll(bits)));
        ++rank;
      }
    }
  }
  for (std::size_t j = 0; j < count; ++j) {
    const std::uint32_t id = ids[j];
    const std::uint64_t below = present_[id / 64] & ((std::uint64_t{1} << (id % 64)) - 1);
    slots[j] = rows_before_[id / 64] + static_cast<std::uint32_t>(__builtin_popcountll(below));
  }
  for (std::size_t s = 0; s < nonempty_.size(); ++s) {
    for (std::uint64_t words_set = nonempty_[s]; words_set != 0; words_set &= words_set - 1) {
      present_[s * 64 + static_cast<std::size_t>(__builtin_ctzll(words_set))] = 0;
    }
    nonempty_[s] = 0;
  }
}

}  // namespace fedleaf::core
