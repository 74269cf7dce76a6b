#include "core/privacy/privacy_plan.h"

#include <catch2/catch.hpp>

#include "tests/core/error_matchers.h"

using fedleaf::core::plan_privacy;
using fedleaf::core::PrivacyPlanInput;
using fedleaf::test::MessageContains;

namespace {

PrivacyPlanInput gboard() {
  PrivacyPlanInput in;
  in.devices = 3'000'000;
  in.per_round = 6500;
  in.rounds = 2000;
  in.max_participations = 6;
  in.min_separation = 313;
  in.delta = 1e-10;
  in.noise_multiplier = 7.0;
  return in;
}

}  // namespace

TEST_CASE("privacy_plan_reaches_the_published_epsilon_either_way") {
  const auto forward = plan_privacy(gboard());
  CHECK(forward.epsilon == Approx(8.90).epsilon(0.01));
  CHECK(forward.rho == Approx(0.81).epsilon(0.01));
  CHECK(forward.squared_sensitivity == 79);
  CHECK(forward.noise_multiplier == 7.0);

  auto in = gboard();
  in.noise_multiplier.reset();
  in.target_epsilon = 8.90;
  const auto backward = plan_privacy(in);
  CHECK(backward.noise_multiplier == Approx(7.0).epsilon(0.01));
  CHECK(backward.epsilon <= 8.90);
}

TEST_CASE("privacy_plan_reports_whether_the_population_can_keep_the_limits") {
  auto in = gboard();
  const auto plan = plan_privacy(in);
  CHECK(plan.participations_possible == 6);  // ceil(2000 / 314) = 7, capped at 6
  CHECK(plan.device_rounds_needed == 13'000'000);
  CHECK(plan.device_rounds_available == 18'000'000);
  CHECK(plan.devices_needed_per_window == 6500 * 314);
  CHECK(plan.devices_needed == 2'166'667);  // ceil(13e6 / 6) > 2,041,000
  CHECK(plan.feasible);
  CHECK(plan.mean_participations == Approx(13.0 / 3));

  in.devices = 2'166'666;
  const auto short_by_one = plan_privacy(in);
  CHECK_FALSE(short_by_one.feasible);
  CHECK(short_by_one.epsilon == plan.epsilon);  // the population size does not enter epsilon

  in.devices = 2'100'000;
  in.max_participations = 7;  // now the window decides: 6500 * 314 = 2,041,000 <= 2,100,000
  const auto seven = plan_privacy(in);
  CHECK(seven.participations_possible == 7);
  CHECK(seven.devices_needed == 2'041'000);
  CHECK(seven.feasible);
}

TEST_CASE("privacy_plan_rejects_bad_input_naming_the_field") {
  auto in = gboard();
  in.target_epsilon = 1.0;
  CHECK_THROWS_MATCHES(plan_privacy(in), fedleaf::InvalidInput,
                       MessageContains("exactly one of noise_multiplier and target_epsilon"));
  in = gboard();
  in.noise_multiplier.reset();
  CHECK_THROWS_MATCHES(plan_privacy(in), fedleaf::InvalidInput, MessageContains("exactly one"));
  in = gboard();
  in.devices = 0;
  CHECK_THROWS_MATCHES(plan_privacy(in), fedleaf::InvalidInput, MessageContains("devices:"));
  in = gboard();
  in.per_round = -3;
  CHECK_THROWS_MATCHES(plan_privacy(in), fedleaf::InvalidInput, MessageContains("per_round:"));
  in = gboard();
  in.delta = 0;
  CHECK_THROWS_MATCHES(plan_privacy(in), fedleaf::InvalidInput, MessageContains("delta:"));
  in = gboard();
  in.min_separation = -1;
  CHECK_THROWS_MATCHES(plan_privacy(in), fedleaf::InvalidInput, MessageContains("min_separation:"));
  in = gboard();
  in.noise_multiplier = -7;
  fedleaf::core::PrivacyFieldNames names;
  names.noise_multiplier = "noiseMultiplier";
  CHECK_THROWS_MATCHES(plan_privacy(in, names), fedleaf::InvalidInput,
                       MessageContains("noiseMultiplier: must be a finite number > 0"));
}
