// round_clip_bounds / round_example_cap / open_round_robust_json: a round's adaptive clip bounds
// and example cap in its row.
#include "server/repository/round_clip_bounds.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "core/error.h"
#include "tests/core/error_matchers.h"

namespace fedleaf::server {
namespace {

using test::MessageContains;

RoundRecord round_with(const std::string& robust_json) {
  RoundRecord round;
  round.population_id = "p";
  round.number = 3;
  round.robust_json = robust_json;
  return round;
}

}  // namespace

TEST_CASE("round_clip_bounds_read_back_exactly_what_the_opening_round_stored",
          "[round_clip_bounds]") {
  // Bounds the geometric rule produces are not short decimals: they must survive the JSON text.
  const core::ClipBounds bounds = {{"emb/weight", 0.01 * std::exp(0.9)}, {"out/weight", 1.0 / 3.0}};
  CHECK(round_clip_bounds(round_with(open_round_robust_json(bounds, std::nullopt))) == bounds);
  CHECK(open_round_robust_json({}, std::nullopt) == "{}");
  CHECK(round_clip_bounds(round_with("{}")).empty());
  // A closed round's robust_json holds its counts beside the bounds.
  CHECK(round_clip_bounds(round_with(R"({"clipped": {"a": 1}, "clip_bound": {"a": 0.5}})")) ==
        core::ClipBounds{{"a", 0.5}});
}

TEST_CASE("round_example_cap_reads_back_what_the_opening_round_stored", "[round_clip_bounds]") {
  const std::uint64_t cap = (std::uint64_t{1} << 53) - 1;  // exact through the JSON text
  const RoundRecord round = round_with(open_round_robust_json({{"a", 0.5}}, cap));
  CHECK(round_example_cap(round) == std::optional<std::uint64_t>(cap));
  CHECK(round_clip_bounds(round) == core::ClipBounds{{"a", 0.5}});
  CHECK(open_round_robust_json({}, 606) == R"({"example_cap":606})");
  CHECK_FALSE(round_example_cap(round_with("{}")));
  for (const char* bad :
       {R"({"example_cap": 0})", R"({"example_cap": -3})", R"({"example_cap": 1.5})",
        R"({"example_cap": "606"})", R"({"example_cap": 9007199254740993})"}) {
    INFO(bad);
    CHECK_THROWS_MATCHES(round_example_cap(round_with(bad)), InvalidInput,
                         MessageContains("robust_json.example_cap is not an integer in [1, 2^53]"));
  }
  CHECK_THROWS_MATCHES(round_example_cap(round_with("[")), InvalidInput,
                       MessageContains("robust_json is not a JSON object"));
}

TEST_CASE("round_clip_bounds_reject_a_robust_json_they_cannot_read", "[round_clip_bounds]") {
  CHECK_THROWS_MATCHES(round_clip_bounds(round_with("[")), InvalidInput,
                       MessageContains("round 3 of population 'p': robust_json is not a JSON "
                                       "object"));
  CHECK_THROWS_MATCHES(round_clip_bounds(round_with(R"({"clip_bound": 1})")), InvalidInput,
                       MessageContains("robust_json.clip_bound is not an object"));
  CHECK_THROWS_MATCHES(round_clip_bounds(round_with(R"({"clip_bound": {"a": "1"}})")), InvalidInput,
                       MessageContains("robust_json.clip_bound['a'] is not a number"));
}

}  // namespace fedleaf::server
