// The embedding rows a dataset touches, and each id's position among them: what a leaf asks the
// server for (model:select) and how it lays out the compact table it trains.
//
//   std::vector<std::uint32_t> rows = distinct_ids(dataset.ids(), vocab);  // sorted, unique
//   RowCompaction c = compact_rows(dataset.ids(), vocab);
//   c.rows == rows;  c.rows[c.compact_ids[j]] == dataset.ids()[j];
//
// Both use a bitmap of the ids present (vocab / 8 bytes) with a running count per 64-bit word:
// one pass over the ids, no vocab-long map of rows, no sort. Throws InvalidInput for an id >=
// vocab.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fedleaf::core {

// The ids in increasing order, each once.
std::vector<std::uint32_t> distinct_ids(const std::vector<std::uint32_t>& ids, std::size_t vocab);

struct RowCompaction {
  std::vector<std::uint32_t> rows;         // distinct_ids(ids, vocab): compact row → global row
  std::vector<std::uint32_t> compact_ids;  // ids[j] → its compact row
};

RowCompaction compact_rows(const std::vector<std::uint32_t>& ids, std::size_t vocab);

}  // namespace fedleaf::core
