// The distinct ids of a dataset, numbered densely in increasing order: compact row r is the r-th
// smallest id. A dataset stores each nonzero's compact row instead of its id, so a leaf trains a
// compact table of the embedding rows its data touch with no lookup per id (see dataset.h); this
// maps compact rows back to global rows.
//
//   std::vector<std::uint32_t> ids{70, 3, 70};
//   CompactRows rows = CompactRows::number_in_place(ids, vocab);   // ids == {1, 0, 1}
//   rows.size() == 2;  rows.rows() == {3, 70};  rows.end_row() == 71;
//   CompactRows both = CompactRows::union_of({&rows, &other}, &renumber);
//   rows.for_each_row(0, rows.size(), [&](std::size_t r, std::uint32_t global) {
//     /* ... compact row r is global row `global` */ });
//
// Stored as the nonempty 64-row words of a presence bitmap, each with its word number and a
// running count (16 bytes per nonempty word): at most 0.25 bytes per row of the id range and at
// most 16 bytes per distinct id, whatever the ids' spread, never a copy of the ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fedleaf::core {

class CompactRows {
 public:
  CompactRows() = default;  // no rows

  // Replaces each id by its compact row among the distinct ids and returns those rows. Throws
  // InvalidInput, leaving the ids unchanged, for an id >= bound. One pass over the ids through a
  // temporary bitmap of the id range when it is no larger than the ids; a sorted copy of the ids
  // otherwise (a few ids spread over a huge range).
  static CompactRows number_in_place(std::vector<std::uint32_t>& ids, std::size_t bound);

  // The rows present in any of `sets` (a table fed by several inputs): their union, and in
  // renumber[k] (when not null) for each set k, compact row r of set k's compact row in the union.
  static CompactRows union_of(const std::vector<const CompactRows*>& sets,
                              std::vector<std::vector<std::uint32_t>>* renumber);

  // Number of distinct rows.
  std::size_t size() const { return count_; }
  // The largest row + 1 (0 without rows): every row is below it. 64 bits: it can be 2^32.
  std::uint64_t end_row() const;
  // The global rows, increasing.
  std::vector<std::uint32_t> rows() const;

  // Calls visit(r, global) for each compact row r in [begin, end), in increasing order: compact
  // row r is global row `global`. Requires begin <= end <= size(). A branch per 64 rows, not per
  // run of consecutive rows (a sparse dataset's runs are a row or two, their ends unpredictable).
  template <class Visit>
  void for_each_row(std::size_t begin, std::size_t end, Visit visit) const {
    if (begin >= end) return;
    std::size_t word = word_of(begin);
    std::uint64_t bits = words_[word].present;
    for (std::size_t skip = begin - words_[word].rows_before; skip > 0; --skip) bits &= bits - 1;
    for (std::size_t r = begin; r < end; ++r) {
      while (bits == 0) bits = words_[++word].present;
      visit(r, words_[word].number * 64 + static_cast<std::uint32_t>(__builtin_ctzll(bits)));
      bits &= bits - 1;
    }
  }

 private:
  struct Word {
    std::uint64_t present = 0;      // bit k: row 64 * number + k is present (never 0)
    std::uint32_t rows_before = 0;  // rows present in the words before this one
    std::uint32_t number = 0;       // which 64 rows: number * 64 .. number * 64 + 63
  };

  // The word holding compact row r < size().
  std::size_t word_of(std::size_t r) const;

  std::vector<Word> words_;
  std::size_t count_ = 0;
};

}  // namespace fedleaf::core
