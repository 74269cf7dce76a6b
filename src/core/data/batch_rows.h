// The rows one batch touches, numbered in increasing row order: what a row-sparse gradient is
// laid out by. The optimizer then visits a table's rows (and their state) in address order, each
// memory page once per step, instead of in the batch's random order; and the numbering costs a
// bit per table row instead of a uint32 per row (a row → slot map).
//
//   BatchRows numbering;
//   numbering.number(ids, count, table_rows, rows, slots);
//   // rows: the distinct ids, increasing; rows[slots[j]] == ids[j] for every j
//
// Stored as a bitmap of the rows present with a running count per 64-bit word (the per-batch
// counterpart of CompactRows), and a bitmap of the nonempty words, so a call costs O(ids + words
// that hold a row + table_rows / 4096), not O(table_rows).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fedleaf::core {

class BatchRows {
 public:
  // Writes the distinct values of ids[0..count) in increasing order to `rows` and, for each j,
  // the position of ids[j] in `rows` to slots[j]. Every id must be < table_rows (unchecked).
  // Allocates on the first call for a table size, then only when `rows` must grow.
  void number(const std::uint32_t* ids, std::size_t count, std::size_t table_rows,
              std::vector<std::uint32_t>& rows, std::uint32_t* slots);

 private:
  // All zero between calls.
  std::vector<std::uint64_t> present_;      // bit k of word w: row 64 w + k is in the batch
  std::vector<std::uint64_t> nonempty_;     // bit k of word s: present_[64 s + k] is nonzero
  std::vector<std::uint32_t> rows_before_;  // rows of the batch in the words before word w
};

}  // namespace fedleaf::core
