// Sorting the touched keys of a sparse accumulator, with the slot each key's state sits in.
//
//   std::vector<KeySlot> order = {{7, 0}, {3, 1}};
//   sort_by_key(order, /*max_key=*/7);   // order == {{3, 1}, {7, 0}}
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fedleaf::core {

// A touched key and its slot in the sparse representation's arrays.
struct KeySlot {
  std::uint64_t key;
  std::size_t slot;
};

// Sorts by key; keys must be distinct and all ≤ max_key. For large inputs an LSD radix sort
// with digits of at most 11 bits over the bits max_key needs (O(n), sequential); std::sort below
// 4096 items.
void sort_by_key(std::vector<KeySlot>& items, std::uint64_t max_key);

}  // namespace fedleaf::core
