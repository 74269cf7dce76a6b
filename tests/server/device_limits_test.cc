// device_limits.h: a privacy section's device limits (read by the section's one reader;
// enrollments_per_token_per_hour defaults to 1000), and the participation rules —
// max_participations, and min_separation counting the rounds strictly between two rounds of one
// device (both sides of the boundary), one train task per round.
#include "server/repository/device_limits.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "tests/core/error_matchers.h"

namespace fedleaf::server {
namespace {

using test::MessageContains;

PopulationSettings with_privacy(const std::string& json) {
  PopulationSettings s;
  s.privacy_json = json;
  return s;
}

DeviceRecord device_with(int participations, int last_round) {
  DeviceRecord d;
  d.participations = participations;
  d.last_round = last_round;
  return d;
}

}  // namespace

// The limits come from the section's one reader (privacy_spec.h, whose own tests check every
// field's rules): what the store keeps is that reader's canonical JSON.
TEST_CASE("device_limits_read_the_privacy_section", "[devices]") {
  CHECK_FALSE(device_limits(PopulationSettings{}));
  const std::string section =
      R"({"mechanism":"dp_ftrl_tree","noise_multiplier":1.0,"clip_norm":0.5,"delta":1e-6,)"
      R"("max_epsilon":10,"max_participations":2,"min_separation":1)";
  const DeviceLimits limits = *device_limits(with_privacy(section + "}"));
  CHECK(limits.max_participations == 2);
  CHECK(limits.min_separation == 1);
  CHECK(limits.enrollments_per_token_per_hour == 1000);
  CHECK(device_limits(with_privacy(section + R"(,"enrollments_per_token_per_hour":5})"))
            ->enrollments_per_token_per_hour == 5);
}

TEST_CASE("device_limits_refuse_stored_text_that_is_no_privacy_section", "[devices]") {
  CHECK_THROWS_MATCHES(device_limits(with_privacy(R"({"min_separation":1})")), InvalidInput,
                       MessageContains("population.privacy"));
  CHECK_THROWS_MATCHES(device_limits(with_privacy("[1]")), InvalidInput,
                       MessageContains("population.privacy"));
}

TEST_CASE("participation_rules_separation_counts_the_rounds_strictly_between", "[devices]") {
  const DeviceLimits limits{3, 2, 1000};
  CHECK_FALSE(participation_refusal(device_with(0, -1), 0, limits));  // a new device
  // Last round 4, min_separation 2: rounds 5 and 6 between → 7 is the first allowed.
  CHECK_FALSE(participation_refusal(device_with(1, 4), 7, limits));
  const auto too_soon = participation_refusal(device_with(1, 4), 6, limits);
  REQUIRE(too_soon);
  CHECK(too_soon->rule == ParticipationRefusal::Rule::kMinSeparation);
  CHECK(too_soon->retry_round == 7);
  CHECK(too_soon->message.find("min_separation") == 0);
  CHECK(too_soon->message.find("it may return at round 7") != std::string::npos);
  const auto same_round = participation_refusal(device_with(1, 4), 4, limits);
  REQUIRE(same_round);
  CHECK(same_round->message.find("round 4 already (one per round)") != std::string::npos);
  // min_separation 0: the next round is allowed, the same one never.
  const DeviceLimits none{3, 0, 1000};
  CHECK_FALSE(participation_refusal(device_with(1, 4), 5, none));
  CHECK(participation_refusal(device_with(1, 4), 4, none));
}

TEST_CASE("participation_rules_stop_a_device_at_max_participations", "[devices]") {
  const DeviceLimits limits{2, 0, 1000};
  CHECK_FALSE(participation_refusal(device_with(1, 0), 5, limits));
  const auto used = participation_refusal(device_with(2, 1), 5, limits);
  REQUIRE(used);
  CHECK(used->rule == ParticipationRefusal::Rule::kMaxParticipations);
  CHECK(used->message ==
        "max_participations: this device has taken part in 2 rounds, the most the population "
        "allows: it may take no more tasks");
}

}  // namespace fedleaf::server
