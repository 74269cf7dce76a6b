// round_clip_bounds / open_round_robust_json: a round's adaptive clip bounds in its row.
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
  CHECK(round_clip_bounds(round_with(open_round_robust_json(bounds))) == bounds);
  CHECK(open_round_robust_json({}) == "{}");
  CHECK(round_clip_bounds(round_with("{}")).empty());
  // A closed round's robust_json holds its counts beside the bounds.
  CHECK(round_clip_bounds(round_with(R"({"clipped": {"a": 1}, "clip_bound": {"a": 0.5}})")) ==
        core::ClipBounds{{"a", 0.5}});
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
