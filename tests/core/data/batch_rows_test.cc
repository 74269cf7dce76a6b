#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "core/data/batch_rows.h"
#include "core/data/seeded_random.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::random_ids;
using fedleaf::test::sorted_unique;

TEST_CASE("batch_rows_number_the_distinct_ids_in_increasing_order", "[batch_rows]") {
  // One numbering object across calls of every size and table size, as a layer uses it: each
  // call must start from a clean state (the bitmaps are cleared after every call). Table sizes
  // cross the 64-row words and the 4096-row summary words.
  BatchRows numbering;
  std::vector<std::uint32_t> rows;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    SeededRandom rng(seed);
    const std::size_t table_rows =
        seed % 3 == 0 ? 70000 : static_cast<std::size_t>(1 + rng.below(9000));
    const std::vector<std::uint32_t> ids = random_ids(rng, rng.below(3000), table_rows);
    std::vector<std::uint32_t> slots(ids.size(), 0xffffffffu);

    numbering.number(ids.data(), ids.size(), table_rows, rows, slots.data());

    REQUIRE(rows == sorted_unique(ids));
    for (std::size_t j = 0; j < ids.size(); ++j) {
      REQUIRE(slots[j] < rows.size());
      CHECK(rows[slots[j]] == ids[j]);
    }
  }
}

TEST_CASE("batch_rows_handle_no_ids_and_the_table_edges", "[batch_rows]") {
  BatchRows numbering;
  std::vector<std::uint32_t> rows{99};
  numbering.number(nullptr, 0, 10, rows, nullptr);
  CHECK(rows.empty());

  // Rows 0, 63, 64, 4095, 4096 and the last row: word and summary-word boundaries.
  const std::vector<std::uint32_t> ids{8191, 4096, 0, 64, 4095, 63, 4096, 0};
  std::vector<std::uint32_t> slots(ids.size());
  numbering.number(ids.data(), ids.size(), 8192, rows, slots.data());
  CHECK(rows == std::vector<std::uint32_t>{0, 63, 64, 4095, 4096, 8191});
  CHECK(slots == std::vector<std::uint32_t>{5, 4, 0, 2, 3, 1, 4, 0});
}
