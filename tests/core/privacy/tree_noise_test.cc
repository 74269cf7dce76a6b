#include "core/privacy/tree_noise.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tests/core/error_matchers.h"

using fedleaf::core::GridGaussian;
using fedleaf::core::prefix_forest;
using fedleaf::core::TreeNode;
using fedleaf::core::TreeNoise;
using fedleaf::core::TreeNoiseSecret;
using fedleaf::test::MessageContains;

namespace {

// A fixed secret for tests only; a population's comes from the OS's CSPRNG.
TreeNoiseSecret test_secret(std::uint8_t seed) {
  TreeNoiseSecret secret;
  for (std::size_t i = 0; i < secret.size(); ++i)
    secret[i] = static_cast<std::uint8_t>(seed + 7 * i);
  return secret;
}

std::vector<std::int64_t> row_noise(const TreeNoise& noise, std::uint32_t tensor, std::uint64_t row,
                                    std::size_t n) {
  std::vector<std::int64_t> units(n, 0);
  noise.add_to_row(tensor, row, units.data(), n);
  return units;
}

}  // namespace

TEST_CASE("tree_noise_is_the_same_for_the_same_secret_node_tensor_and_row_after_a_restart") {
  const GridGaussian gaussian(7.0);
  const auto first = row_noise(TreeNoise::for_node(test_secret(1), gaussian, {3, 5}), 2, 40, 16);
  // "Restart": fresh objects built from nothing but the stored secret.
  const GridGaussian again(7.0);
  const auto second = row_noise(TreeNoise::for_node(test_secret(1), again, {3, 5}), 2, 40, 16);
  CHECK(first == second);
  CHECK(first != std::vector<std::int64_t>(16, 0));
  // Anything else changed gives other noise.
  CHECK(row_noise(TreeNoise::for_node(test_secret(2), gaussian, {3, 5}), 2, 40, 16) != first);
  CHECK(row_noise(TreeNoise::for_node(test_secret(1), gaussian, {3, 6}), 2, 40, 16) != first);
  CHECK(row_noise(TreeNoise::for_node(test_secret(1), gaussian, {2, 5}), 2, 40, 16) != first);
  CHECK(row_noise(TreeNoise::for_node(test_secret(1), gaussian, {3, 5}), 3, 40, 16) != first);
  CHECK(row_noise(TreeNoise::for_node(test_secret(1), gaussian, {3, 5}), 2, 41, 16) != first);
  // A shorter row is a prefix of the same stream: rows can be drawn in any order and any length.
  const auto shorter = row_noise(TreeNoise::for_node(test_secret(1), gaussian, {3, 5}), 2, 40, 5);
  CHECK(std::equal(shorter.begin(), shorter.end(), first.begin()));
}

TEST_CASE("tree_noise_is_the_same_whatever_order_rows_and_tensors_are_drawn_in") {
  // TreeNoise computes the first blocks of eight consecutive rows together and keeps them: the
  // noise of a row must not depend on which rows were drawn before it.
  const GridGaussian gaussian(2.0);
  const TreeNoiseSecret secret = test_secret(5);
  const std::uint64_t last = UINT64_MAX;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> rows;
  for (std::uint64_t row = 0; row < 20; ++row) {
    rows.push_back({0, row});
    rows.push_back({1, row});
  }
  for (std::uint64_t row = last - 10; row != 0 && row <= last; ++row) rows.push_back({2, row});
  std::vector<std::vector<std::int64_t>> forward;
  {
    const TreeNoise noise = TreeNoise::for_round(secret, gaussian, 6);  // two keys
    for (const auto& [tensor, row] : rows) forward.push_back(row_noise(noise, tensor, row, 3));
  }
  const TreeNoise noise = TreeNoise::for_round(secret, gaussian, 6);
  for (std::size_t i = rows.size(); i-- > 0;) {
    INFO("tensor " << rows[i].first << " row " << rows[i].second);
    CHECK(row_noise(noise, rows[i].first, rows[i].second, 3) == forward[i]);
    // And each alone, from a fresh object.
    CHECK(row_noise(TreeNoise::for_round(secret, gaussian, 6), rows[i].first, rows[i].second, 3) ==
          forward[i]);
  }
}

TEST_CASE("tree_noise_derivation_is_frozen") {
  // A running population's released nodes must keep their noise: any change to the derivation,
  // to ChaCha20Bits or to the sampler that moves these values would release a second, different
  // noise for nodes already released. The same values natively and on wasm.
  TreeNoiseSecret secret;
  for (std::size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<std::uint8_t>(i);
  const GridGaussian gaussian(1.0);
  REQUIRE(gaussian.scale() == 4096);
  CHECK(row_noise(TreeNoise::for_node(secret, gaussian, {2, 3}), 1, 5, 6) ==
        std::vector<std::int64_t>{1874, -63, -3472, 1559, 1121, -44});
}

TEST_CASE("tree_noise_of_a_prefix_is_the_sum_of_its_nodes_and_a_round_the_difference") {
  const GridGaussian gaussian(0.5);
  const TreeNoiseSecret secret = test_secret(9);
  const std::size_t n = 8;
  for (std::uint64_t t = 1; t <= 40; ++t) {
    INFO("round " << t);
    std::vector<std::int64_t> by_nodes(n, 0);
    for (const TreeNode& node : prefix_forest(t)) {
      TreeNoise::for_node(secret, gaussian, node).add_to_row(1, 77, by_nodes.data(), n);
    }
    const auto prefix = row_noise(TreeNoise::for_prefix(secret, gaussian, t), 1, 77, n);
    CHECK(prefix == by_nodes);
    const auto before = row_noise(TreeNoise::for_prefix(secret, gaussian, t - 1), 1, 77, n);
    const auto round = row_noise(TreeNoise::for_round(secret, gaussian, t), 1, 77, n);
    for (std::size_t i = 0; i < n; ++i) CHECK(round[i] == prefix[i] - before[i]);
  }
}

TEST_CASE("tree_noise_has_the_scale_of_its_nodes_over_many_coordinates") {
  const GridGaussian gaussian(3.0);
  const TreeNoiseSecret secret = test_secret(42);
  const auto scale = static_cast<double>(gaussian.scale());
  // Round 1 adds one node; round 4 adds one and removes two: variance 1 and 3 times scale^2.
  for (const auto& [round, nodes] : {std::pair<std::uint64_t, double>{1, 1.0}, {4, 3.0}}) {
    INFO("round " << round);
    const TreeNoise noise = TreeNoise::for_round(secret, gaussian, round);
    const std::size_t rows = 4000;
    const std::size_t width = 10;
    double sum = 0;
    double sum_sq = 0;
    for (std::uint64_t row = 0; row < rows; ++row) {
      for (std::int64_t u : row_noise(noise, 0, row, width)) {
        sum += static_cast<double>(u);
        sum_sq += static_cast<double>(u) * static_cast<double>(u);
      }
    }
    const double count = rows * width;
    const double sd = std::sqrt(nodes) * scale;
    CHECK(std::abs(sum / count) < 5 * sd / std::sqrt(count));
    CHECK(std::sqrt(sum_sq / count) == Approx(sd).epsilon(0.02));
  }
}

TEST_CASE("tree_noise_rejects_a_round_outside_the_tree") {
  CHECK_THROWS_MATCHES(TreeNoise::for_round(test_secret(1), GridGaussian(1.0), 0),
                       fedleaf::InvalidInput, MessageContains("round: must be in [1, 2^56 - 1]"));
}
