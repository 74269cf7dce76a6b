#include "core/privacy/round_noise.h"

#include <catch2/catch.hpp>

#include "tests/core/error_matchers.h"
#include "tests/core/privacy/private_test_updates.h"
#include "tests/core/privacy/test_secret.h"

using fedleaf::core::GridGaussian;
using fedleaf::core::RoundNoise;
using fedleaf::core::RoundNoiseShape;
using fedleaf::core::TreeNoise;
using fedleaf::test::MessageContains;
using fedleaf::test::test_secret;

TEST_CASE("round_noise_is_the_rounds_tree_noise_on_every_row_of_every_tensor") {
  const RoundNoiseShape shape{fedleaf::test::private_test_layouts(), GridGaussian(0.9)};
  // Rounds 1, 2 and 8 each add one tree node and remove none, one and three of the previous
  // prefix (tree_forest.h): signed sums of one to four nodes.
  for (const std::uint64_t round : {1, 2, 8}) {
    INFO("round " << round);
    const RoundNoise noise = RoundNoise::draw(shape, test_secret(2), round);
    const TreeNoise reference = TreeNoise::for_round(test_secret(2), shape.gaussian, round);
    CHECK(noise.round() == round);
    CHECK(noise.grid() == shape.gaussian.grid());
    CHECK(noise.scale() == shape.gaussian.scale());
    REQUIRE(noise.tensors() == shape.layouts.size());
    std::uint32_t ordinal = 0;
    for (const auto& [name, layout] : shape.layouts) {
      INFO(name);
      const auto split = fedleaf::core::row_split(name, layout);
      const std::vector<std::int64_t>& units = noise.units(ordinal);
      REQUIRE(units.size() == split.rows * split.row_size);
      bool any_nonzero = false;
      for (std::uint64_t row = split.rows; row-- > 0;) {  // the reference in reverse row order
        std::vector<std::int64_t> expected(split.row_size, 0);
        reference.add_to_row(ordinal, row, expected.data(), expected.size());
        const auto first = units.begin() + static_cast<std::ptrdiff_t>(row * split.row_size);
        CHECK(std::vector<std::int64_t>(
                  first, first + static_cast<std::ptrdiff_t>(split.row_size)) == expected);
        for (std::int64_t u : expected) any_nonzero = any_nonzero || u != 0;
      }
      CHECK(any_nonzero);
      ++ordinal;
    }
  }
  CHECK_FALSE(RoundNoise::draw(shape, test_secret(2), 3).units(0) ==
              RoundNoise::draw(shape, test_secret(3), 3).units(0));
}

TEST_CASE("round_noise_refuses_a_round_outside_the_tree") {
  const RoundNoiseShape shape{fedleaf::test::private_test_layouts(), GridGaussian(1.0)};
  CHECK_THROWS_MATCHES(RoundNoise::draw(shape, test_secret(1), 0), fedleaf::InvalidInput,
                       MessageContains("round:"));
}
