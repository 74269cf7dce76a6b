// The tree-aggregation noise of DP-FTRL, derived from one secret: the same secret, node, tensor
// and row give the same noise every time, in every process.
//
//   TreeNoise noise = TreeNoise::for_round(secret, GridGaussian(sigma), /*round=*/5);
//   std::vector<std::int64_t> units(row_size);            // a row of the sum, in grid units
//   noise.add_to_row(/*tensor=*/0, /*row=*/17, units.data(), units.size());
//
// Why derived and not stored: a node's noise must never be released twice with two different
// values (the second draw would be fresh information about the node's sum), whatever crashes in
// between. Deriving it from the population's secret makes that hold by construction: the 32-byte
// secret, drawn once from the OS's CSPRNG when the population is created and stored with it, is
// the only noise state; nothing is drawn at round close, so a kill -9 anywhere cannot change what
// any node's noise is. The secret must never be logged or served: whoever holds it can subtract
// the noise from every released model.
//
// Derivation (ChaCha20, chacha20.h, used as a pseudorandom function): a node's key is the first
// 32 bytes of the keystream block under the secret with counter 0 and nonce "tree" || node id
// (little-endian; node id = level << 56 | index); the noise of a row is the discrete Gaussian
// (grid_gaussian.h) driven by the keystream under the node's key with nonce tensor || row (the
// tensor's ordinal as 4 bytes, the row as 8), one draw per element in order, all of a row's draws
// taking their bits from one BitReservoir over that stream (bit_reservoir.h: a draw's leftover
// bits serve the next). Every (node, tensor, row) thus has its own independent-looking stream,
// and rows can be drawn in any order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/privacy/chacha20.h"
#include "core/privacy/grid_gaussian.h"
#include "core/privacy/tree_forest.h"

namespace fedleaf::core {

using TreeNoiseSecret = ChaCha20Key;

class TreeNoise {
 public:
  // The noise released with round `round`: prefix(round) - prefix(round - 1) (tree_forest.h).
  // InvalidInput ("round: ...") unless 1 <= round <= kMaxTreeRounds.
  static TreeNoise for_round(const TreeNoiseSecret& secret, const GridGaussian& gaussian,
                             std::uint64_t round);
  // The noise of the sum of rounds 1..rounds.
  static TreeNoise for_prefix(const TreeNoiseSecret& secret, const GridGaussian& gaussian,
                              std::uint64_t rounds);
  // The noise of one node.
  static TreeNoise for_node(const TreeNoiseSecret& secret, const GridGaussian& gaussian,
                            TreeNode node);

  ~TreeNoise();
  TreeNoise(TreeNoise&&) = default;
  TreeNoise& operator=(TreeNoise&&) = default;
  TreeNoise(const TreeNoise&) = delete;
  TreeNoise& operator=(const TreeNoise&) = delete;

  // Adds, element by element, this noise of row `row` of tensor `tensor` (in grid units) to
  // units[0..n). Throws fedleaf::Error if a draw exceeds 2^48 units (probability far below
  // 2^-1000: the bound that keeps sums of noise and updates inside int64).
  void add_to_row(std::uint32_t tensor, std::uint64_t row, std::int64_t* units,
                  std::size_t n) const;

  const GridGaussian& gaussian() const { return gaussian_; }

 private:
  struct SignedKey {
    ChaCha20Key key;
    std::int64_t sign;  // +1 for a node added, -1 for a node removed
  };
  TreeNoise(const TreeNoiseSecret& secret, const GridGaussian& gaussian,
            const std::vector<TreeNode>& added, const std::vector<TreeNode>& removed);

  // The first keystream blocks of kChaCha20Lanes consecutive rows of one tensor under one node's
  // key, computed together (chacha20_first_blocks) when add_to_row asks for a row outside them:
  // rows drawn in order (PrivateSum::release) pay one SIMD block computation per eight rows
  // instead of a block each. Only a cache — the noise is the same in any order — but filled by
  // a const method: one TreeNoise must not be used from two threads at once (core has none).
  struct RowBlocks {
    std::uint32_t tensor = 0;
    std::uint64_t first_row = 0;
    std::uint64_t rows = 0;  // 0: empty
    ChaCha20Lanes blocks = {};
  };

  GridGaussian gaussian_;
  std::vector<SignedKey> keys_;
  mutable std::vector<RowBlocks> row_blocks_;  // by key
};

}  // namespace fedleaf::core
