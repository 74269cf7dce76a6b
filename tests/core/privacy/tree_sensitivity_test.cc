#include "core/privacy/tree_sensitivity.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "tests/core/error_matchers.h"

using fedleaf::core::TreeSensitivity;
using fedleaf::test::MessageContains;

namespace {

// The forest of `rounds` leaves as [begin, end) ranges: every complete dyadic subtree that fits.
std::vector<std::pair<std::int64_t, std::int64_t>> forest_nodes(std::int64_t rounds) {
  std::vector<std::pair<std::int64_t, std::int64_t>> nodes;
  for (std::int64_t size = 1; size <= rounds; size *= 2) {
    for (std::int64_t begin = 0; begin + size <= rounds; begin += size) {
      nodes.emplace_back(begin, begin + size);
    }
  }
  return nodes;
}

// The definition, by enumeration: the largest sum over nodes of (participations under the node)^2
// over every set of rounds with at most `max_k` members and >= `separation` rounds strictly
// between two of them.
std::int64_t brute_force(std::int64_t rounds, std::int64_t max_k, std::int64_t separation) {
  const auto nodes = forest_nodes(rounds);
  std::int64_t best = 0;
  for (std::uint32_t mask = 0; mask < (1u << rounds); ++mask) {
    std::vector<std::int64_t> chosen;
    for (std::int64_t i = 0; i < rounds; ++i) {
      if ((mask >> i) & 1u) chosen.push_back(i);
    }
    if (static_cast<std::int64_t>(chosen.size()) > max_k) continue;
    bool separated = true;
    for (std::size_t i = 1; i < chosen.size(); ++i) {
      separated = separated && chosen[i] - chosen[i - 1] - 1 >= separation;
    }
    if (!separated) continue;
    std::int64_t sum = 0;
    for (const auto& node : nodes) {
      const auto c = std::count_if(chosen.begin(), chosen.end(), [&](std::int64_t x) {
        return x >= node.first && x < node.second;
      });
      sum += c * c;
    }
    best = std::max(best, sum);
  }
  return best;
}

}  // namespace

TEST_CASE("tree_sensitivity_matches_enumeration_of_every_participation_pattern") {
  for (std::int64_t rounds : {1, 2, 3, 5, 7, 8, 11, 13}) {
    for (std::int64_t max_k : {1, 2, 3, 5}) {
      for (std::int64_t separation : {0, 1, 2, 4}) {
        const TreeSensitivity tree(rounds, max_k, separation);
        for (std::int64_t r = 1; r <= rounds; ++r) {
          INFO("rounds " << r << " of " << rounds << ", max_k " << max_k << ", separation "
                         << separation);
          CHECK(tree.squared(r) == brute_force(r, max_k, separation));
        }
      }
    }
  }
}

TEST_CASE("tree_sensitivity_reproduces_the_gboard_spanish_model") {
  // google-research/federated dp_ftrl/blogpost_supplemental_privacy_accounting.ipynb: noise 7.0,
  // 2000 rounds, 6 participations, min_separation 313 -> zCDP 0.81 = S^2 / (2 * 49).
  const TreeSensitivity tree(2000, 6, 313);
  CHECK(tree.squared(2000) == 79);
  CHECK(tree.participations_possible(2000) == 6);
}

TEST_CASE("tree_sensitivity_counts_min_separation_as_rounds_strictly_between") {
  // Rounds 0 and 1 have no round between them: allowed with separation 0, not with 1.
  CHECK(TreeSensitivity(2, 2, 0).squared(2) == 1 + 1 + 4);  // both leaves and the root
  CHECK(TreeSensitivity(2, 2, 1).squared(2) == 1 + 1);      // one leaf and the root
  // Over 4 rounds, separation 1 allows rounds 0 and 2 (8) but not 0 and 1 (10).
  CHECK(TreeSensitivity(4, 2, 1).squared(4) == 8);
  CHECK(TreeSensitivity(4, 2, 0).squared(4) == 10);
  // Separation 2 over 4 rounds: only rounds 0 and 3, two leaves, two pairs and the root's 4.
  CHECK(TreeSensitivity(4, 2, 2).squared(4) == 8);
  CHECK(TreeSensitivity(4, 2, 3).squared(4) == 3);  // one participation: a leaf's path
  CHECK(TreeSensitivity(3, 2, 1).participations_possible(3) == 2);  // rounds 0 and 2
  CHECK(TreeSensitivity(3, 2, 2).participations_possible(3) == 1);
}

TEST_CASE("tree_sensitivity_has_closed_forms_at_the_extremes") {
  // One participation: the deepest leaf's path, floor(log2 T) + 1 nodes.
  CHECK(TreeSensitivity(2000, 1, 0).squared(2000) == 11);
  CHECK(TreeSensitivity(1024, 6, 5000).squared(1024) == 11);
  // Every round (separation 0, no limit) over 2^m rounds: sum over levels of 2^(m-l) (2^l)^2.
  CHECK(TreeSensitivity(8, 8, 0).squared(8) == 8 * 15);
}

TEST_CASE("tree_sensitivity_is_monotone_in_each_limit") {
  for (std::int64_t sep : {0, 3, 20}) {
    std::int64_t previous = 0;
    for (std::int64_t k = 1; k <= 6; ++k) {
      const std::int64_t s2 = TreeSensitivity(300, k, sep).squared(300);
      CHECK(s2 >= previous);
      previous = s2;
    }
  }
  std::int64_t previous = TreeSensitivity(300, 4, 0).squared(300);
  for (std::int64_t sep : {1, 2, 5, 30, 100}) {
    const std::int64_t s2 = TreeSensitivity(300, 4, sep).squared(300);
    CHECK(s2 <= previous);
    previous = s2;
  }
  const TreeSensitivity tree(300, 4, 10);
  for (std::int64_t r = 2; r <= 300; ++r) CHECK(tree.squared(r) >= tree.squared(r - 1));
}

TEST_CASE("tree_sensitivity_rejects_limits_out_of_range_naming_the_field") {
  CHECK_THROWS_MATCHES(TreeSensitivity(0, 1, 0), fedleaf::InvalidInput, MessageContains("rounds"));
  CHECK_THROWS_MATCHES(TreeSensitivity(10, 0, 0), fedleaf::InvalidInput,
                       MessageContains("max_participations: must be an integer in [1"));
  CHECK_THROWS_MATCHES(TreeSensitivity(10, 1, -1), fedleaf::InvalidInput,
                       MessageContains("min_separation: must be an integer in [0"));
  CHECK_THROWS_MATCHES(TreeSensitivity(1 << 20, 1000, 1000), fedleaf::InvalidInput,
                       MessageContains("min_separation and max_participations"));
  CHECK_THROWS_MATCHES(TreeSensitivity(100'000, 100'000, 0), fedleaf::InvalidInput,
                       MessageContains("max_participations: 100000 participations in 100000"));
  const TreeSensitivity tree(10, 2, 1);
  CHECK_THROWS_MATCHES(tree.squared(0), fedleaf::InvalidInput,
                       MessageContains("rounds: must be in [1, 10]"));
  CHECK_THROWS_MATCHES(tree.squared(11), fedleaf::InvalidInput, MessageContains("got 11"));
  fedleaf::core::PrivacyFieldNames names;
  names.min_separation = "minSeparation";
  CHECK_THROWS_MATCHES(TreeSensitivity(10, 1, -2, names), fedleaf::InvalidInput,
                       MessageContains("minSeparation:"));
}
