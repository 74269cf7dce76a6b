#include "core/privacy/tree_noise.h"

#include <algorithm>

#include "core/error.h"

namespace fedleaf::core {
namespace {

constexpr std::int64_t kMaxDraw = std::int64_t{1} << 48;

void store_le(std::uint64_t value, int bytes, std::uint8_t* out) {
  for (int b = 0; b < bytes; ++b) out[b] = static_cast<std::uint8_t>(value >> (8 * b));
}

ChaCha20Nonce row_nonce(std::uint32_t tensor, std::uint64_t row) {
  ChaCha20Nonce nonce{};
  store_le(tensor, 4, nonce.data());
  store_le(row, 8, nonce.data() + 4);
  return nonce;
}

ChaCha20Key node_key(const TreeNoiseSecret& secret, TreeNode node) {
  ChaCha20Nonce nonce{'t', 'r', 'e', 'e'};
  store_le(static_cast<std::uint64_t>(node.level) << 56 | node.index, 8, nonce.data() + 4);
  const ChaCha20Block block = chacha20_block(secret, 0, nonce);
  ChaCha20Key key;
  std::copy(block.begin(), block.begin() + key.size(), key.begin());
  return key;
}

}  // namespace

TreeNoise::TreeNoise(const TreeNoiseSecret& secret, const GridGaussian& gaussian,
                     const std::vector<TreeNode>& added, const std::vector<TreeNode>& removed)
    : gaussian_(gaussian) {
  for (const TreeNode& node : added) keys_.push_back({node_key(secret, node), 1});
  for (const TreeNode& node : removed) keys_.push_back({node_key(secret, node), -1});
  row_blocks_.resize(keys_.size());
}

TreeNoise TreeNoise::for_round(const TreeNoiseSecret& secret, const GridGaussian& gaussian,
                               std::uint64_t round) {
  const RoundNoiseNodes nodes = round_noise_nodes(round);
  return TreeNoise(secret, gaussian, nodes.added, nodes.removed);
}

TreeNoise TreeNoise::for_prefix(const TreeNoiseSecret& secret, const GridGaussian& gaussian,
                                std::uint64_t rounds) {
  return TreeNoise(secret, gaussian, prefix_forest(rounds), {});
}

TreeNoise TreeNoise::for_node(const TreeNoiseSecret& secret, const GridGaussian& gaussian,
                              TreeNode node) {
  return TreeNoise(secret, gaussian, {node}, {});
}

TreeNoise::~TreeNoise() {
  for (SignedKey& signed_key : keys_) {
    volatile std::uint8_t* key = signed_key.key.data();
    for (std::size_t i = 0; i < signed_key.key.size(); ++i) key[i] = 0;
  }
  for (RowBlocks& cached : row_blocks_) {
    volatile std::uint32_t* words = &cached.blocks[0][0];
    for (std::size_t i = 0; i < 16 * kChaCha20Lanes; ++i) words[i] = 0;
  }
}

void TreeNoise::add_to_row(std::uint32_t tensor, std::uint64_t row, std::int64_t* units,
                           std::size_t n) const {
  const ChaCha20Nonce nonce = row_nonce(tensor, row);
  for (std::size_t k = 0; k < keys_.size(); ++k) {
    const SignedKey& signed_key = keys_[k];
    RowBlocks& cached = row_blocks_[k];
    if (cached.rows == 0 || cached.tensor != tensor || row < cached.first_row ||
        row - cached.first_row >= cached.rows) {
      ChaCha20Nonce nonces[kChaCha20Lanes];
      // Rows past 2^64 - 1 do not exist: their lanes repeat the last row, never read.
      const std::uint64_t rows =
          UINT64_MAX - row >= kChaCha20Lanes - 1 ? kChaCha20Lanes : UINT64_MAX - row + 1;
      for (std::size_t lane = 0; lane < kChaCha20Lanes; ++lane) {
        nonces[lane] = row_nonce(tensor, row + std::min<std::uint64_t>(lane, rows - 1));
      }
      chacha20_first_blocks(signed_key.key, nonces, cached.blocks);
      cached.tensor = tensor;
      cached.first_row = row;
      cached.rows = rows;
    }
    ChaCha20Bits stream(signed_key.key, nonce, cached.blocks,
                        static_cast<std::size_t>(row - cached.first_row));
    BitReservoir bits(stream);  // one per (node, row): a row's draws share its stream's bits
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t draw = gaussian_.sample_units(bits);
      if (draw > kMaxDraw || draw < -kMaxDraw) {
        throw Error("tree noise: a draw beyond 2^48 grid units");
      }
      units[i] += signed_key.sign * draw;
    }
  }
}

}  // namespace fedleaf::core
