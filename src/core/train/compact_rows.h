// The embedding rows a dataset touches, numbered densely: a compact table of those rows is what a
// leaf trains, and this maps a global row (an id) to its compact row and back.
//
//   CompactRows rows(dataset.ids(), vocab);
//   std::vector<float> table(rows.size() * dim);        // compact row r holds global row ...
//   rows.for_each_run(0, rows.size(), [&](std::size_t r, std::uint32_t global, std::size_t n) {
//     /* ... global rows global .. global + n - 1 are compact rows r .. r + n - 1 */ });
//   std::uint32_t r = rows.compact(id);                  // id must be one the dataset touches
//
// Stored as a bitmap of the rows present with a running count per 64-bit word, side by side
// (16 bytes per 64 rows, so a lookup touches one cache line): 0.25 bytes per vocab row whatever
// the data, never a copy of the ids (4 bytes per nonzero) nor a list of the rows (4 bytes per
// touched row). Built in one pass over the ids, no sort.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fedleaf::core {

class CompactRows {
 public:
  // Throws InvalidInput for an id >= vocab.
  CompactRows(const std::vector<std::uint32_t>& ids, std::size_t vocab);

  // Number of distinct rows.
  std::size_t size() const { return count_; }
  // The compact row of a global row the ids contain (unchecked: any other id gives a wrong row).
  std::uint32_t compact(std::uint32_t id) const {
    const Word& word = words_[id / 64];
    const std::uint64_t below = word.present & ((std::uint64_t{1} << (id % 64)) - 1);
    return word.rows_before + static_cast<std::uint32_t>(__builtin_popcountll(below));
  }
  // out[j] = compact(ids[j]) for j < count (out may be ids): a run of ids at a time, with the CPU's
  // popcount instruction where the build's baseline lacks it (x86-64 without -mpopcnt: chosen at
  // load).
  void compact_all(const std::uint32_t* ids, std::size_t count, std::uint32_t* out) const;
  // The global rows, increasing.
  std::vector<std::uint32_t> rows() const;

  // Calls run(r, global, n) for the compact rows [begin, end) in increasing order, grouped in
  // maximal runs of consecutive global rows: compact rows r .. r + n - 1 are global rows
  // global .. global + n - 1. Requires begin <= end <= size().
  template <class Run>
  void for_each_run(std::size_t begin, std::size_t end, Run run) const {
    if (begin >= end) return;
    std::size_t r = begin;
    std::size_t word = word_of(begin);
    std::uint64_t bits = words_[word].present;
    for (std::size_t skip = begin - words_[word].rows_before; skip > 0; --skip) bits &= bits - 1;
    std::size_t run_start = r;
    std::uint64_t run_global = 0;
    while (r < end) {
      while (bits == 0) bits = words_[++word].present;
      const std::uint64_t global = word * 64 + static_cast<std::uint64_t>(__builtin_ctzll(bits));
      bits &= bits - 1;
      if (r != run_start && global != run_global + (r - run_start)) {
        run(run_start, static_cast<std::uint32_t>(run_global), r - run_start);
        run_start = r;
      }
      if (r == run_start) run_global = global;
      ++r;
    }
    if (r != run_start) run(run_start, static_cast<std::uint32_t>(run_global), r - run_start);
  }

 private:
  // The word holding compact row r < size().
  std::size_t word_of(std::size_t r) const;

  struct Word {
    std::uint64_t present = 0;      // bit k: row 64 w + k is present
    std::uint32_t rows_before = 0;  // rows present in the words before this one
  };
  std::vector<Word> words_;
  std::size_t count_ = 0;
};

}  // namespace fedleaf::core
