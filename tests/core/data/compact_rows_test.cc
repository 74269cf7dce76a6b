#include <catch2/catch.hpp>

#include <utility>

#include "core/data/compact_rows.h"
#include "core/data/seeded_random.h"
#include "tests/core/error_matchers.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;
using fedleaf::test::random_ids;
using fedleaf::test::sorted_unique;

namespace {

// The rows for_each_row visits over [begin, end): (compact, global) pairs.
std::vector<std::pair<std::size_t, std::uint32_t>> visited(const CompactRows& rows,
                                                           std::size_t begin, std::size_t end) {
  std::vector<std::pair<std::size_t, std::uint32_t>> out;
  rows.for_each_row(begin, end,
                    [&](std::size_t r, std::uint32_t global) { out.emplace_back(r, global); });
  return out;
}

}  // namespace

TEST_CASE("compact_rows_number_the_distinct_ids_in_increasing_order", "[compact_rows]") {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    SeededRandom rng(seed);
    // Ids dense in their range (numbered through a bitmap of the range) and a few ids spread over
    // a huge range (numbered through a sorted copy), with bounds around both sides of the switch.
    const std::size_t bound = seed % 3 == 0   ? static_cast<std::size_t>(1 + rng.below(1u << 31))
                              : seed % 3 == 1 ? static_cast<std::size_t>(1 + rng.below(1000))
                                              : static_cast<std::size_t>(1 + rng.below(64 * 50));
    const std::vector<std::uint32_t> ids = random_ids(rng, rng.below(60), bound);
    const std::vector<std::uint32_t> expected = sorted_unique(ids);
    std::vector<std::uint32_t> numbered = ids;

    const CompactRows rows = CompactRows::number_in_place(numbered, bound);

    CHECK(rows.size() == expected.size());
    CHECK(rows.rows() == expected);
    CHECK(rows.end_row() == (expected.empty() ? 0 : std::uint64_t{expected.back()} + 1));
    for (std::size_t j = 0; j < ids.size(); ++j) REQUIRE(expected[numbered[j]] == ids[j]);
  }
}

TEST_CASE("compact_rows_visit_any_range_giving_each_row_once_with_its_global_row",
          "[compact_rows]") {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    SeededRandom rng(seed);
    const auto vocab = static_cast<std::size_t>(1 + rng.below(700));
    // Dense and sparse draws: long runs of consecutive rows and isolated rows, empty words.
    const std::vector<std::uint32_t> ids =
        random_ids(rng, rng.below(2 * vocab), seed % 2 ? vocab : vocab / 3 + 1);
    const std::vector<std::uint32_t> expected = sorted_unique(ids);
    std::vector<std::uint32_t> numbered = ids;
    const CompactRows rows = CompactRows::number_in_place(numbered, vocab);
    const auto begin = static_cast<std::size_t>(rng.below(expected.size() + 1));
    const auto end = begin + static_cast<std::size_t>(rng.below(expected.size() - begin + 1));

    const auto pairs = visited(rows, begin, end);

    REQUIRE(pairs.size() == end - begin);
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      CHECK(pairs[k].first == begin + k);
      CHECK(pairs[k].second == expected[begin + k]);
    }
  }
}

TEST_CASE("compact_rows_visit_from_the_middle_of_a_word_across_empty_words", "[compact_rows]") {
  std::vector<std::uint32_t> ids{70, 3, 4, 5, 63, 64, 65, 200};
  const CompactRows rows = CompactRows::number_in_place(ids, 256);

  CHECK(visited(rows, 2, 8) == std::vector<std::pair<std::size_t, std::uint32_t>>{
                                   {2, 5}, {3, 63}, {4, 64}, {5, 65}, {6, 70}, {7, 200}});
  CHECK(visited(rows, 7, 8) == std::vector<std::pair<std::size_t, std::uint32_t>>{{7, 200}});
}

TEST_CASE("compact_rows_of_no_ids_is_empty_and_visits_nothing", "[compact_rows]") {
  std::vector<std::uint32_t> no_ids;
  const CompactRows none = CompactRows::number_in_place(no_ids, 0);
  const CompactRows unused = CompactRows::number_in_place(no_ids, 100);

  CHECK(none.size() == 0);
  CHECK(none.end_row() == 0);
  CHECK(unused.rows().empty());
  CHECK(visited(unused, 0, 0).empty());
  CHECK(CompactRows().size() == 0);
}

TEST_CASE("compact_rows_reject_an_id_outside_the_bound_leaving_the_ids_unchanged",
          "[compact_rows]") {
  std::vector<std::uint32_t> ids{3, 64, 5};
  CHECK_THROWS_MATCHES(CompactRows::number_in_place(ids, 64), fedleaf::InvalidInput,
                       MessageContains("id 64 is not below 64"));
  CHECK(ids == std::vector<std::uint32_t>{3, 64, 5});
}

TEST_CASE("compact_rows_of_the_largest_ids_end_at_2_to_the_32", "[compact_rows]") {
  std::vector<std::uint32_t> ids{4294967294u, 0, 4294967294u};
  const CompactRows rows = CompactRows::number_in_place(ids, 4294967295u);
  CHECK(ids == std::vector<std::uint32_t>{1, 0, 1});
  CHECK(rows.rows() == std::vector<std::uint32_t>{0, 4294967294u});
  CHECK(rows.end_row() == std::uint64_t{4294967295u});
}
