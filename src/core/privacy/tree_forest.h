// Which nodes of the binary tree of rounds make up the sum of the first t rounds (tree
// aggregation, Dwork, Naor, Pitassi, Rothblum 2010; Chan, Shi, Song 2011; as DP-FTRL uses it).
//
//   std::vector<TreeNode> nodes = prefix_forest(6);     // {(2, 0), (1, 2)}: rounds 1-4 and 5-6
//   RoundNoiseNodes d = round_noise_nodes(4);           // added {(2, 0)}, removed {(1, 0), (0, 2)}
//
// Rounds are numbered from 1. Node (level, index) covers rounds index * 2^level + 1 through
// (index + 1) * 2^level. The prefix of t rounds is the sum of the complete subtrees that binary
// counting gives: one node per set bit of t, highest level first. Each node is released with its
// own noise, so the noise of prefix t is the sum of its nodes' noises, and what round t adds to
// the model, prefix(t) - prefix(t - 1), carries the noise of the nodes the step from t - 1 to t
// adds minus the noise of those it removes: post-processing of released nodes.
#pragma once

#include <cstdint>
#include <vector>

namespace fedleaf::core {

// Rounds up to 2^56 - 1: a node's level and index fit one 64-bit id (tree_noise.h).
inline constexpr std::uint64_t kMaxTreeRounds = (std::uint64_t{1} << 56) - 1;

struct TreeNode {
  int level;
  std::uint64_t index;
  friend bool operator==(const TreeNode& a, const TreeNode& b) {
    return a.level == b.level && a.index == b.index;
  }
};

// The nodes whose sums add up to rounds 1..rounds, highest level first; empty for 0 rounds.
// InvalidInput ("rounds: ...") past kMaxTreeRounds.
std::vector<TreeNode> prefix_forest(std::uint64_t rounds);

struct RoundNoiseNodes {
  std::vector<TreeNode> added;    // in prefix_forest(round), not in prefix_forest(round - 1)
  std::vector<TreeNode> removed;  // in prefix_forest(round - 1), not in prefix_forest(round)
};

// InvalidInput ("round: ...") unless 1 <= round <= kMaxTreeRounds.
RoundNoiseNodes round_noise_nodes(std::uint64_t round);

}  // namespace fedleaf::core
