#include "core/aggregation/accumulator/radix_sort_by_key.h"

#include <algorithm>

namespace fedleaf::core {

void sort_by_key(std::vector<KeySlot>& items, std::uint64_t max_key) {
  if (items.size() < 4096) {
    std::sort(items.begin(), items.end(),
              [](const KeySlot& a, const KeySlot& b) { return a.key < b.key; });
    return;
  }
  unsigned bits = 1;
  while (bits < 64 && (std::uint64_t{1} << bits) <= max_key) ++bits;
  const unsigned passes = (bits + 10) / 11;
  const unsigned digit = (bits + passes - 1) / passes;
  const std::size_t buckets = std::size_t{1} << digit;
  const std::uint64_t mask = buckets - 1;
  std::vector<KeySlot> scratch(items.size());
  std::vector<std::size_t> start(buckets);
  for (unsigned pass = 0; pass < passes; ++pass) {
    const unsigned shift = pass * digit;
    std::fill(start.begin(), start.end(), 0);
    for (const KeySlot& item : items) ++start[static_cast<std::size_t>((item.key >> shift) & mask)];
    std::size_t sum = 0;
    for (std::size_t& s : start) {
      const std::size_t count = s;
      s = sum;
      sum += count;
    }
    for (const KeySlot& item : items) {
      scratch[start[static_cast<std::size_t>((item.key >> shift) & mask)]++] = item;
    }
    items.swap(scratch);
  }
}

}  // namespace fedleaf::core
