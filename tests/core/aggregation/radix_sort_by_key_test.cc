#include "core/aggregation/accumulator/radix_sort_by_key.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <random>

namespace fedleaf {
namespace {

using core::KeySlot;

// `n` distinct keys below `key_space` in random order, slot = position before sorting.
std::vector<KeySlot> shuffled_keys(std::size_t n, std::uint64_t key_space, std::mt19937_64& rng) {
  std::vector<std::uint64_t> keys;
  std::uniform_int_distribution<std::uint64_t> pick(0, key_space - 1);
  while (keys.size() < n * 2) keys.push_back(pick(rng));
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::shuffle(keys.begin(), keys.end(), rng);
  keys.resize(std::min(n, keys.size()));
  std::vector<KeySlot> items;
  for (std::size_t s = 0; s < keys.size(); ++s) items.push_back(KeySlot{keys[s], s});
  return items;
}

TEST_CASE("sort_by_key_orders_small_and_radix_sized_inputs_keeping_each_keys_slot") {
  std::mt19937_64 rng(5);
  for (const auto& [n, key_space] : {std::pair<std::size_t, std::uint64_t>{0, 10},
                                     {1, 10},
                                     {100, 1000},
                                     {5000, 10000},           // radix sort, few bits
                                     {20000, 1ull << 40},     // several 11-bit passes
                                     {10000, ~0ull >> 1}}) {  // keys up to 2^63 - 1
    INFO("n = " << n << ", key space " << key_space);
    std::vector<KeySlot> items = shuffled_keys(n, key_space, rng);
    const std::vector<KeySlot> before = items;
    std::uint64_t max_key = 0;
    for (const KeySlot& k : items) max_key = std::max(max_key, k.key);

    core::sort_by_key(items, max_key);

    REQUIRE(items.size() == before.size());
    CHECK(std::is_sorted(items.begin(), items.end(),
                         [](const KeySlot& a, const KeySlot& b) { return a.key < b.key; }));
    for (const KeySlot& k : items) {
      REQUIRE(k.slot < before.size());
      CHECK(before[k.slot].key == k.key);
    }
  }
}

}  // namespace
}  // namespace fedleaf
