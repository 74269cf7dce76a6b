// The tree noise as it was before issue 39's speed-up (commit 022a6dd): the byte-wise ChaCha20,
// the CKS sampler drawing a 64-bit word per uniform, one cipher object per row and node. Kept in
// the benchmark only, as the baseline of its A/B comparison (never linked into fedleaf).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/privacy/chacha20.h"
#include "core/privacy/random_bits.h"

namespace fedleaf::bench {

// The old ChaCha20Bits: one 64-byte block at a time, words assembled byte by byte.
class LegacyChaCha20Bits : public core::RandomBits {
 public:
  LegacyChaCha20Bits(const core::ChaCha20Key& key, const core::ChaCha20Nonce& nonce);
  std::uint64_t next() override;

 private:
  core::ChaCha20Key key_;
  core::ChaCha20Nonce nonce_;
  core::ChaCha20Block block_{};
  std::uint32_t next_counter_ = 0;
  std::size_t used_ = sizeof(core::ChaCha20Block);
};

// The old DiscreteGaussian::sample for sigma^2 = scale^2 (CKS Algorithms 1-3).
std::int64_t legacy_sample(core::RandomBits& bits, std::uint64_t scale);

// The old TreeNoise::add_to_row over node keys with signs (+1 added, -1 removed).
struct LegacyNodeKey {
  core::ChaCha20Key key;
  std::int64_t sign;
};
void legacy_add_to_row(const std::vector<LegacyNodeKey>& keys, std::uint64_t scale,
                       std::uint32_t tensor, std::uint64_t row, std::int64_t* units, std::size_t n);

}  // namespace fedleaf::bench
