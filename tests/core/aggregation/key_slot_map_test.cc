#include <catch2/catch.hpp>
#include <map>
#include <random>

#include "core/aggregation/accumulator/key_slot_map.h"

namespace fedleaf {
namespace {

TEST_CASE("key_slot_map_assigns_slots_in_first_insertion_order_like_a_reference_map") {
  std::mt19937_64 rng(5);
  core::KeySlotMap map;
  std::map<std::uint64_t, std::uint64_t> reference;
  for (int i = 0; i < 20000; ++i) {
    // Clustered and spread keys, many repeats.
    const std::uint64_t key = i % 3 ? rng() % 5000 : rng() >> 1;
    if (map.capacity() < core::KeySlotMap::capacity_for(map.size() + 1)) {
      map.rehash(core::KeySlotMap::capacity_for(map.size() + 1));
    }
    const std::uint64_t slot = map.find_or_insert(key);
    const auto [it, inserted] = reference.emplace(key, reference.size());
    CHECK(slot == it->second);
    (void)inserted;
  }
  CHECK(map.size() == reference.size());
  CHECK(map.capacity() >= 2 * map.size());
  CHECK(map.bytes() == map.capacity() * core::KeySlotMap::entry_bytes());
  map.clear();
  CHECK(map.size() == 0);
  CHECK(map.bytes() == 0);
}

TEST_CASE("key_slot_map_capacity_for_keeps_the_load_at_most_one_half") {
  CHECK(core::KeySlotMap::capacity_for(0) == 16);
  CHECK(core::KeySlotMap::capacity_for(8) == 16);
  CHECK(core::KeySlotMap::capacity_for(9) == 32);
  CHECK(core::KeySlotMap::capacity_for(1000) == 2048);
}

}  // namespace
}  // namespace fedleaf
