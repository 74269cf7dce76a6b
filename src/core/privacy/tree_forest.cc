#include "core/privacy/tree_forest.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace fedleaf::core {
namespace {

std::vector<TreeNode> forest(std::uint64_t rounds) {
  std::vector<TreeNode> nodes;
  std::uint64_t covered = 0;  // rounds covered by the nodes so far
  for (int level = 63; level >= 0; --level) {
    const std::uint64_t size = std::uint64_t{1} << level;
    if (rounds & size) {
      nodes.push_back({level, covered >> level});
      covered += size;
    }
  }
  return nodes;
}

std::vector<TreeNode> minus(const std::vector<TreeNode>& a, const std::vector<TreeNode>& b) {
  std::vector<TreeNode> out;
  for (const TreeNode& node : a) {
    if (std::find(b.begin(), b.end(), node) == b.end()) out.push_back(node);
  }
  return out;
}

}  // namespace

std::vector<TreeNode> prefix_forest(std::uint64_t rounds) {
  if (rounds > kMaxTreeRounds) {
    throw InvalidInput("rounds: must be at most 2^56 - 1, got " + std::to_string(rounds));
  }
  return forest(rounds);
}

RoundNoiseNodes round_noise_nodes(std::uint64_t round) {
  if (round < 1 || round > kMaxTreeRounds) {
    throw InvalidInput("round: must be in [1, 2^56 - 1], got " + std::to_string(round));
  }
  const std::vector<TreeNode> now = forest(round);
  const std::vector<TreeNode> before = forest(round - 1);
  return {minus(now, before), minus(before, now)};
}

}  // namespace fedleaf::core
