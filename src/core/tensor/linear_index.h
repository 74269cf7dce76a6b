// Row-major linear indices of COO coordinates: the key sparse code sorts and merges on.
//
//   auto strides = row_major_strides(dense_shape);      // nullopt if the product overflows
//   std::uint64_t k = linear_index(indices, i, *strides);
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/tensor/sparse_tensor.h"

namespace fedleaf::core {

// Strides of a row-major layout of `dense_shape`, or nullopt when the element count does not
// fit in 64 bits (then callers compare coordinates lexicographically instead).
std::optional<std::vector<std::uint64_t>> row_major_strides(const DenseShape& dense_shape);

inline std::uint64_t linear_index(const CooIndices& indices, std::size_t entry,
                                  const std::vector<std::uint64_t>& strides) {
  std::uint64_t key = 0;
  const std::int64_t* row = indices.data() + entry * strides.size();
  for (std::size_t d = 0; d < strides.size(); ++d) {
    key += static_cast<std::uint64_t>(row[d]) * strides[d];
  }
  return key;
}

}  // namespace fedleaf::core
