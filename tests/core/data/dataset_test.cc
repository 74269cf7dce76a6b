#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "core/data/batch.h"
#include "core/data/dataset.h"
#include "core/data/seeded_random.h"
#include "tests/core/error_matchers.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;
using fedleaf::test::random_ids;
using fedleaf::test::sorted_unique;

TEST_CASE("from_csr_keeps_rows_and_drops_all_one_weights", "[dataset]") {
  Dataset d = Dataset::from_csr({0, 2, 2, 3}, {5, 1, 9}, {1.f, 1.f, 1.f}, {1, 0, 2}, 10);

  CHECK(d.is_sparse());
  CHECK(d.size() == 3);
  CHECK(d.num_features() == 10);
  CHECK(d.weights().empty());
  CHECK(d.global_ids() == std::vector<std::uint32_t>{5, 1, 9});
  CHECK(d.compact_ids() == std::vector<std::uint32_t>{1, 0, 2});
  CHECK(d.distinct_ids().rows() == std::vector<std::uint32_t>{1, 5, 9});
  CHECK(d.labels() == std::vector<std::int32_t>{1, 0, 2});
}

TEST_CASE("from_csr_stores_each_id_as_its_rank_among_the_distinct_ids", "[dataset]") {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SeededRandom rng(seed);
    // Ids dense in their range (the bitmap path) and a few ids spread over up to 2^32 - 1 ids
    // (the sorted path).
    const std::uint64_t range = seed % 2 ? 1 + rng.below(3000) : 1 + rng.below(4294967295u);
    const std::vector<std::uint32_t> ids = random_ids(rng, rng.below(400), range);
    std::vector<std::uint32_t> offsets{0};
    std::vector<std::int32_t> labels;
    for (std::size_t j = 0; j < ids.size(); j += 3) {
      offsets.push_back(static_cast<std::uint32_t>(std::min(ids.size(), j + 3)));
      labels.push_back(0);
    }
    if (ids.empty()) continue;
    const std::vector<std::uint32_t> distinct = sorted_unique(ids);

    const Dataset d =
        Dataset::from_csr(offsets, ids, {}, labels, static_cast<std::uint32_t>(range));

    CHECK(d.distinct_ids().rows() == distinct);
    CHECK(d.distinct_ids().end_row() == std::uint64_t{distinct.back()} + 1);
    REQUIRE(d.compact_ids().size() == ids.size());
    for (std::size_t j = 0; j < ids.size(); ++j) {
      REQUIRE(distinct[d.compact_ids()[j]] == ids[j]);
    }
    CHECK(d.global_ids() == ids);
    // A subset's compact ids are ranks among its own distinct ids, as if built from its ids.
    std::vector<std::uint32_t> examples;
    for (std::size_t i = 0; i < d.size(); ++i) {
      if (rng.below(2) == 0) examples.push_back(static_cast<std::uint32_t>(i));
    }
    const Dataset s = d.subset(examples);
    const Dataset rebuilt = Dataset::from_csr(s.offsets(), s.global_ids(), {}, s.labels(),
                                              static_cast<std::uint32_t>(range));
    CHECK(s.compact_ids() == rebuilt.compact_ids());
    CHECK(s.distinct_ids().rows() == rebuilt.distinct_ids().rows());
  }
}

TEST_CASE("from_csr_infers_num_features_from_the_largest_id", "[dataset]") {
  CHECK(Dataset::from_csr({0, 2}, {3, 7}, {0.5f, 2.f}, {0}).num_features() == 8);
}

TEST_CASE("from_csr_rejects_malformed_csr", "[dataset]") {
  CHECK_THROWS_MATCHES(Dataset::from_csr({0, 1}, {1}, {}, {0, 1}), fedleaf::InvalidInput,
                       MessageContains("offsets has 2 entries, expected labels + 1 = 3"));
  CHECK_THROWS_MATCHES(Dataset::from_csr({0, 2, 1}, {1, 2}, {}, {0, 1}), fedleaf::InvalidInput,
                       MessageContains("end at the number of ids"));
  CHECK_THROWS_MATCHES(Dataset::from_csr({0, 2, 1, 2}, {1, 2}, {}, {0, 1, 0}),
                       fedleaf::InvalidInput, MessageContains("offsets decrease at example 1"));
  CHECK_THROWS_MATCHES(Dataset::from_csr({0, 2}, {1, 2}, {1.f}, {0}), fedleaf::InvalidInput,
                       MessageContains("weights has 1 entries"));
  CHECK_THROWS_MATCHES(Dataset::from_csr({0, 1}, {12}, {}, {0}, 10), fedleaf::InvalidInput,
                       MessageContains("id 12 is not below num_features 10"));
  CHECK_THROWS_MATCHES(Dataset::from_csr({0, 1}, {1}, {}, {-1}), fedleaf::InvalidInput,
                       MessageContains("label -1 of example 0 is negative"));
  CHECK_THROWS_MATCHES(Dataset::from_csr({0, 1}, {1}, {NAN}, {0}), fedleaf::InvalidInput,
                       MessageContains("not finite"));
}

TEST_CASE("from_dense_checks_sizes_and_values", "[dataset]") {
  Dataset d = Dataset::from_dense({1, 2, 3, 4, 5, 6}, 3, {0, 1});
  CHECK_FALSE(d.is_sparse());
  CHECK(d.num_features() == 3);
  CHECK_THROWS_MATCHES(Dataset::from_dense({1, 2, 3}, 2, {0, 1}), fedleaf::InvalidInput,
                       MessageContains("dense values has 3 entries"));
  CHECK_THROWS_MATCHES(Dataset::from_dense({1, INFINITY}, 2, {0}), fedleaf::InvalidInput,
                       MessageContains("dense value 1 of example 0 is not finite"));
}

TEST_CASE("subset_copies_the_chosen_examples_in_the_given_order", "[dataset]") {
  Dataset d = Dataset::from_csr({0, 1, 3, 4}, {4, 5, 6, 7}, {1.f, 2.f, 3.f, 4.f}, {0, 1, 2});
  Dataset s = d.subset({2, 1});
  CHECK(s.offsets() == std::vector<std::uint32_t>{0, 1, 3});
  CHECK(s.global_ids() == std::vector<std::uint32_t>{7, 5, 6});
  CHECK(s.distinct_ids().rows() == std::vector<std::uint32_t>{5, 6, 7});
  CHECK(s.compact_ids() == std::vector<std::uint32_t>{2, 0, 1});
  CHECK(s.weights() == std::vector<float>{4.f, 2.f, 3.f});
  CHECK(s.labels() == std::vector<std::int32_t>{2, 1});
  CHECK(s.num_features() == d.num_features());

  Dataset dense = Dataset::from_dense({1, 2, 3, 4, 5, 6}, 2, {0, 1, 2});
  CHECK(dense.subset({2, 0}).dense_values() == std::vector<float>{5, 6, 1, 2});
  CHECK_THROWS_MATCHES(d.subset({3}), fedleaf::InvalidInput, MessageContains("example 3"));
}

TEST_CASE("shuffled_order_is_a_seeded_permutation", "[dataset]") {
  const auto a = shuffled_order(1000, 7);
  const auto b = shuffled_order(1000, 7);
  const auto c = shuffled_order(1000, 8);
  CHECK(a == b);
  CHECK(a != c);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (std::uint32_t i = 0; i < 1000; ++i) REQUIRE(sorted[i] == i);
}

TEST_CASE("split_by_fraction_partitions_the_examples", "[dataset]") {
  std::vector<std::uint32_t> offsets{0};
  std::vector<std::uint32_t> ids;
  std::vector<std::int32_t> labels;
  for (std::uint32_t i = 0; i < 100; ++i) {
    ids.push_back(i);
    offsets.push_back(i + 1);
    labels.push_back(static_cast<std::int32_t>(i % 2));
  }
  Dataset d = Dataset::from_csr(offsets, ids, {}, labels);

  DatasetSplit s = split_dataset(d, 0.2, 3);

  CHECK(s.eval.size() == 20);
  CHECK(s.train.size() == 80);
  const std::vector<std::uint32_t> train_ids = s.train.global_ids();
  const std::vector<std::uint32_t> eval_ids = s.eval.global_ids();
  std::set<std::uint32_t> all(train_ids.begin(), train_ids.end());
  all.insert(eval_ids.begin(), eval_ids.end());
  CHECK(all.size() == 100);
  CHECK(std::is_sorted(train_ids.begin(), train_ids.end()));
  CHECK_THROWS_AS(split_dataset(d, 1.5, 3), fedleaf::InvalidInput);
}

TEST_CASE("split_by_flags_follows_the_flags", "[dataset]") {
  Dataset d = Dataset::from_csr({0, 1, 2, 3}, {0, 1, 2}, {}, {0, 1, 0});
  DatasetSplit s = split_dataset(d, std::vector<std::uint8_t>{0, 1, 0});
  CHECK(s.train.global_ids() == std::vector<std::uint32_t>{0, 2});
  CHECK(s.eval.global_ids() == std::vector<std::uint32_t>{1});
  CHECK_THROWS_MATCHES(split_dataset(d, std::vector<std::uint8_t>{0, 1}), fedleaf::InvalidInput,
                       MessageContains("2 flags for 3 examples"));
}

TEST_CASE("batch_gatherer_makes_contiguous_batches_of_chosen_examples", "[dataset]") {
  Dataset d = Dataset::from_csr({0, 2, 3, 5}, {1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}, {0, 1, 0});
  BatchGatherer gather(d, BatchIds::kGlobal);
  const std::vector<std::uint32_t> order{2, 0};

  Batch b = gather.gather(order.data(), 2);

  CHECK(b.size == 2);
  CHECK(std::vector<std::uint32_t>(b.offsets, b.offsets + 3) ==
        std::vector<std::uint32_t>{0, 2, 4});
  CHECK(std::vector<std::uint32_t>(b.ids, b.ids + 4) == std::vector<std::uint32_t>{4, 5, 1, 2});
  CHECK(std::vector<float>(b.weights, b.weights + 4) == std::vector<float>{4, 5, 1, 2});
  CHECK(std::vector<std::int32_t>(b.labels, b.labels + 2) == std::vector<std::int32_t>{0, 0});

  BatchGatherer gather_compact(d, BatchIds::kCompact);
  Batch r = gather_compact.gather(order.data(), 2);
  CHECK(std::vector<std::uint32_t>(r.ids, r.ids + 4) == std::vector<std::uint32_t>{3, 4, 0, 1});
  CHECK(std::vector<float>(r.weights, r.weights + 4) == std::vector<float>{4, 5, 1, 2});
  // Compact ids are below the distinct id count by construction, and the batch says so; global ids
  // carry no such promise.
  CHECK(r.ids_below == 5);
  CHECK(b.ids_below == 0);

  Dataset dense = Dataset::from_dense({1, 2, 3, 4, 5, 6}, 2, {0, 1, 2});
  BatchGatherer gather_dense(dense, BatchIds::kGlobal);
  Batch db = gather_dense.gather(order.data(), 2);
  CHECK(db.ids == nullptr);
  CHECK(db.dense_width == 2);
  CHECK(std::vector<float>(db.dense, db.dense + 4) == std::vector<float>{5, 6, 1, 2});
}
