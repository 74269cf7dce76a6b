#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/features/murmur3.h"

using namespace fedleaf::core;

// The vectors the JS implementation (js_bindings/src/datasets/murmur3.js) is checked against too.
TEST_CASE("murmur3_32_matches_the_shared_test_vectors", "[murmur3]") {
  std::ifstream in(FEDLEAF_MURMUR3_VECTORS);
  REQUIRE(in);
  const nlohmann::json file = nlohmann::json::parse(in);
  const auto& vectors = file.at("vectors");
  REQUIRE(vectors.size() >= 16);
  for (const auto& v : vectors) {
    const std::string text = v.at("text").get<std::string>();
    INFO("text '" << text << "' seed " << v.at("seed").get<std::uint32_t>());
    CHECK(murmur3_32(text, v.at("seed").get<std::uint32_t>()) == v.at("hash").get<std::uint32_t>());
  }
}

TEST_CASE("murmur3_32_covers_every_tail_length", "[murmur3]") {
  // Tails of 1, 2 and 3 bytes must each change the hash.
  CHECK(murmur3_32("a", 0) != murmur3_32("b", 0));
  CHECK(murmur3_32("ab", 0) != murmur3_32("ac", 0));
  CHECK(murmur3_32("abcde", 0) != murmur3_32("abcdf", 0));
  CHECK(murmur3_32("abcdefg", 0) != murmur3_32("abcdefh", 0));
}
