// RoundRobustness: a closed round's parts, their stored form (byte for byte what servers wrote
// before the type existed) and the parts read back from every form a row may hold.
#include "server/repository/round_robustness.h"

#include <catch2/catch.hpp>

#include "core/error.h"

namespace fedleaf::server {
namespace {

// What robust_json() wrote for these stats before the parts were typed (captured from it).
constexpr const char* kClosedRound =
    R"({"capped":2,"clip_bound":{"emb/weight":0.30000000000000004,"out/weight":1.0},)"
    R"("clipped":{"emb/weight":3,"out/weight":0},"clipped_rows":{"emb/weight":5},)"
    R"("example_cap":606,"next_clip_bound":{"emb/weight":0.5,"out/weight":1e-07},)"
    R"("next_example_cap":604,"withheld_nonfinite":7,"withheld_rows":{"emb/weight":41,)"
    R"("out/weight":0}})";
constexpr const char* kEmptyRound =
    R"({"capped":0,"clip_bound":{},"clipped":{},"clipped_rows":{},"example_cap":null,)"
    R"("next_clip_bound":{},"withheld_nonfinite":0,"withheld_rows":{}})";

core::RoundStats closed_round_stats() {
  core::RoundStats stats;
  stats.num_capped = 2;
  stats.clipped_per_tensor = {{"emb/weight", 3}, {"out/weight", 0}};
  stats.withheld_per_tensor = {{"emb/weight", 41}, {"out/weight", 0}};
  stats.clip_bound_per_tensor = {{"emb/weight", 0.1 + 0.2}, {"out/weight", 1.0}};
  stats.rows_clipped_per_tensor = {{"emb/weight", 5}};
  stats.example_cap = 606;
  return stats;
}

}  // namespace

TEST_CASE("robustness_json_of_a_closed_round_is_byte_identical_to_the_untyped_form",
          "[round_robustness]") {
  const RoundRobustness robust = closed_round_robustness(
      closed_round_stats(), 7, {{"emb/weight", 0.5}, {"out/weight", 1e-7}}, 604);

  CHECK(robustness_json(robust) == kClosedRound);
  CHECK(robustness_json(closed_round_robustness({}, 0, {}, std::nullopt)) == kEmptyRound);
  REQUIRE(robust.example_cap);
  CHECK(robust.example_cap->value() == 606);
  CHECK(robust.clipped->at("emb/weight") == 3);
}

TEST_CASE("read_robustness_reads_back_every_form_a_row_holds_byte_for_byte", "[round_robustness]") {
  // A closed round now, an empty one, an open round's bounds and cap, a row of a server before
  // clip bounds, a row before adaptive clipping.
  for (const std::string& stored :
       {std::string(kClosedRound), std::string(kEmptyRound),
        std::string(R"({"clip_bound":{"a":0.5},"example_cap":606})"), std::string("{}"),
        std::string(R"({"capped":1,"clipped":{"emb/weight":2},"withheld_nonfinite":0})"),
        std::string(R"({"capped":0,"staleness":{"0":3,"2":1},"withheld_nonfinite":0})")}) {
    CHECK(robustness_json(read_robustness(stored)) == stored);
  }
  // A buffered version's staleness counts (version_staleness.h) share the row.
  const RoundRobustness version = read_robustness(R"({"staleness":{"0":3,"2":1}})");
  REQUIRE(version.staleness);
  CHECK(version.staleness->counts == std::map<std::uint64_t, std::uint64_t>{{0, 3}, {2, 1}});
  const RoundRobustness open = read_robustness(R"({"clip_bound":{"a":0.5}})");
  CHECK_FALSE(open.staleness);
  CHECK_FALSE(open.clipped);
  CHECK_FALSE(open.example_cap);
  CHECK(*open.clip_bound == core::ClipBounds{{"a", 0.5}});
}

TEST_CASE("read_robustness_rejects_a_row_it_cannot_read", "[round_robustness]") {
  CHECK_THROWS_AS(read_robustness("[]"), Error);
  CHECK_THROWS_AS(read_robustness(R"({"capped":-1})"), Error);
  CHECK_THROWS_AS(read_robustness(R"({"clip_bound":{"a":1}})"), Error);
  CHECK_THROWS_AS(read_robustness(R"({"surprise":1})"), Error);
  CHECK_THROWS_AS(read_robustness(R"({"staleness":{"0":-1}})"), Error);
  CHECK_THROWS_AS(read_robustness(R"({"staleness":[1]})"), Error);
}

}  // namespace fedleaf::server
