#include <catch2/catch.hpp>

#include "core/train/distinct_ids.h"
#include "core/train/seeded_random.h"
#include "tests/core/error_matchers.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

TEST_CASE("distinct_ids_equal_sorting_and_deduplicating_random_ids", "[distinct_ids]") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    SeededRandom rng(seed);
    const auto vocab = static_cast<std::size_t>(1 + rng.below(1000));
    const std::vector<std::uint32_t> ids = fedleaf::test::random_ids(rng, rng.below(300), vocab);
    CHECK(distinct_ids(ids, vocab) == fedleaf::test::sorted_unique(ids));
  }
}

TEST_CASE("distinct_ids_of_no_ids_is_empty", "[distinct_ids]") {
  CHECK(distinct_ids({}, 10).empty());
}

TEST_CASE("distinct_ids_rejects_an_id_outside_the_vocabulary", "[distinct_ids]") {
  CHECK_THROWS_MATCHES(distinct_ids({3, 10}, 10), fedleaf::InvalidInput,
                       MessageContains("id 10 is not below the vocabulary of 10"));
}
