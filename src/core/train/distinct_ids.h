// The embedding rows a dataset touches: what a leaf asks the server for (model:select).
//
//   std::vector<std::uint32_t> rows = distinct_ids(dataset.ids(), vocab);  // sorted, unique
//
// Built through CompactRows (compact_rows.h): a bitmap of the ids present, one pass over the ids,
// no vocab-long map of rows, no sort. Throws InvalidInput for an id >= vocab.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fedleaf::core {

// The ids in increasing order, each once.
std::vector<std::uint32_t> distinct_ids(const std::vector<std::uint32_t>& ids, std::size_t vocab);

}  // namespace fedleaf::core
