// Open-addressing hash map (linear probing) from a key < 2^63 to a slot number. Slots are
// numbered 0, 1, 2, ... in first-insertion order, so the caller keeps the per-key data in plain
// arrays indexed by slot and this table holds only (key, slot) pairs: 16 bytes per entry.
//
//   KeySlotMap map;
//   map.rehash(KeySlotMap::capacity_for(n));   // room for n keys
//   std::size_t slot = map.find_or_insert(key);    // == map.size() - 1 when key was new
//
// The load factor stays at or below 1/2, so probes are short; the caller grows the table
// (rehash) before inserting, which keeps insertion free of allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/aggregation/accumulator/huge_page_reserve.h"

namespace fedleaf::core {

class KeySlotMap {
 public:
  static constexpr std::uint64_t kEmptyKey = ~std::uint64_t{0};

  // Smallest power-of-two table (at least 16 entries) that holds n keys at load ≤ 1/2.
  static std::size_t capacity_for(std::size_t n) {
    std::size_t capacity = 16;
    while (capacity / 2 < n) capacity *= 2;
    return capacity;
  }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return entries_.size(); }
  std::size_t bytes() const { return entries_.capacity() * sizeof(Entry); }
  static constexpr std::size_t entry_bytes() { return sizeof(Entry); }

  // Rebuilds the table with `capacity` entries (a power of two ≥ capacity_for(size())). On
  // bad_alloc the map is unchanged.
  void rehash(std::size_t capacity) {
    std::vector<Entry> fresh;
    reserve_on_huge_pages(fresh, capacity);
    fresh.assign(capacity, Entry{kEmptyKey, 0});
    const unsigned shift = shift_for(capacity);
    for (const Entry& e : entries_) {
      if (e.key != kEmptyKey) place(fresh, shift, e);
    }
    entries_.swap(fresh);
    shift_ = shift;
  }

  // The slot of `key`, inserting it with slot size() when absent. Requires
  // capacity() ≥ capacity_for(size() + 1).
  std::size_t find_or_insert(std::uint64_t key) {
    const std::size_t mask = entries_.size() - 1;
    std::size_t pos = home(key);
    for (;;) {
      Entry& e = entries_[pos];
      if (e.key == key) return static_cast<std::size_t>(e.slot);
      if (e.key == kEmptyKey) {
        e = Entry{key, size_};
        return size_++;
      }
      pos = (pos + 1) & mask;
    }
  }

  // Hints the cache to load the entry where a probe for `key` starts; a caller probing many
  // keys calls it a few keys ahead so that the probes' memory latencies overlap. No effect on
  // the contents; requires a non-empty table.
  void prefetch(std::uint64_t key) const {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(entries_.data() + home(key));
#else
    (void)key;
#endif
  }

  // Swaps contents with an empty map and releases the table.
  void clear() {
    std::vector<Entry>().swap(entries_);
    size_ = 0;
    shift_ = 64;
  }

 private:
  struct Entry {
    std::uint64_t key;
    std::uint64_t slot;
  };

  // Fibonacci hashing: the high bits of key × 2^64/φ spread consecutive keys across the table.
  static std::uint64_t hash(std::uint64_t key) { return key * 0x9E3779B97F4A7C15ull; }
  static unsigned shift_for(std::size_t capacity) {
    unsigned bits = 0;
    while ((std::size_t{1} << bits) < capacity) ++bits;
    return 64 - bits;
  }
  // Where the probe for `key` starts. The shifted hash is below capacity(), so it fits size_t.
  std::size_t home(std::uint64_t key) const {
    return static_cast<std::size_t>(hash(key) >> shift_);
  }
  static void place(std::vector<Entry>& table, unsigned shift, const Entry& e) {
    const std::size_t mask = table.size() - 1;
    std::size_t pos = static_cast<std::size_t>(hash(e.key) >> shift);
    while (table[pos].key != kEmptyKey) pos = (pos + 1) & mask;
    table[pos] = e;
  }

  std::vector<Entry> entries_;
  std::size_t size_ = 0;  // slots are positions in the caller's arrays, so they fit size_t
  unsigned shift_ = 64;
};

}  // namespace fedleaf::core
