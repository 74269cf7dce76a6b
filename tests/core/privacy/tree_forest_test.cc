#include "core/privacy/tree_forest.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "tests/core/error_matchers.h"

using fedleaf::core::kMaxTreeRounds;
using fedleaf::core::prefix_forest;
using fedleaf::core::round_noise_nodes;
using fedleaf::core::TreeNode;
using fedleaf::test::MessageContains;

namespace {

std::uint64_t first_round(TreeNode n) { return (n.index << n.level) + 1; }
std::uint64_t last_round(TreeNode n) { return (n.index + 1) << n.level; }

// Brute force: every node inside rounds 1..t whose parent is not, i.e. the maximal complete
// subtrees, ordered by first round.
std::vector<TreeNode> maximal_nodes(std::uint64_t t) {
  std::vector<TreeNode> out;
  for (int level = 0; level < 12; ++level) {
    for (std::uint64_t index = 0; ((index + 1) << level) <= t; ++index) {
      const TreeNode parent{level + 1, index / 2};
      if (last_round(parent) > t) out.push_back({level, index});
    }
  }
  std::sort(out.begin(), out.end(),
            [](TreeNode a, TreeNode b) { return first_round(a) < first_round(b); });
  return out;
}

bool contains(const std::vector<TreeNode>& nodes, TreeNode node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

}  // namespace

TEST_CASE("prefix_forest_is_the_maximal_complete_subtrees_and_partitions_the_rounds") {
  CHECK(prefix_forest(0).empty());
  CHECK(prefix_forest(6) == std::vector<TreeNode>{{2, 0}, {1, 2}});
  for (std::uint64_t t = 1; t <= 1500; ++t) {
    INFO("t " << t);
    const std::vector<TreeNode> nodes = prefix_forest(t);
    REQUIRE(nodes == maximal_nodes(t));  // already in first-round order: highest level first
    std::uint64_t next = 1;
    for (const TreeNode& node : nodes) {
      CHECK(first_round(node) == next);
      next = last_round(node) + 1;
    }
    CHECK(next == t + 1);
  }
}

TEST_CASE("round_noise_nodes_is_the_difference_of_consecutive_forests") {
  const auto d4 = round_noise_nodes(4);
  CHECK(d4.added == std::vector<TreeNode>{{2, 0}});
  CHECK(d4.removed == std::vector<TreeNode>{{1, 0}, {0, 2}});
  for (std::uint64_t t = 1; t <= 1500; ++t) {
    INFO("t " << t);
    const std::vector<TreeNode> now = maximal_nodes(t);
    const std::vector<TreeNode> before = maximal_nodes(t - 1);
    const auto d = round_noise_nodes(t);
    for (const TreeNode& n : d.added) CHECK((contains(now, n) && !contains(before, n)));
    for (const TreeNode& n : d.removed) CHECK((contains(before, n) && !contains(now, n)));
    const auto in_both = static_cast<std::size_t>(
        std::count_if(now.begin(), now.end(), [&](TreeNode n) { return contains(before, n); }));
    CHECK(d.added.size() + in_both == now.size());
    CHECK(d.removed.size() + in_both == before.size());
    CHECK(d.added.size() == 1);  // binary counting: round t always closes exactly one node
  }
}

TEST_CASE("tree_forest_rejects_rounds_outside_its_range") {
  CHECK(prefix_forest(kMaxTreeRounds).size() == 56);
  CHECK_THROWS_MATCHES(prefix_forest(kMaxTreeRounds + 1), fedleaf::InvalidInput,
                       MessageContains("rounds: must be at most 2^56 - 1"));
  CHECK_THROWS_MATCHES(round_noise_nodes(0), fedleaf::InvalidInput,
                       MessageContains("round: must be in [1, 2^56 - 1], got 0"));
  CHECK_THROWS_MATCHES(round_noise_nodes(kMaxTreeRounds + 1), fedleaf::InvalidInput,
                       MessageContains("round: must be in [1, 2^56 - 1]"));
}
