#include "server/api/client_rate_limiter.h"

#include <catch2/catch.hpp>
#include <string>

#include "core/error.h"

namespace fedleaf::server {

TEST_CASE("rate_limiter_admits_a_burst_then_refuses_with_the_time_to_the_next_request",
          "[rate_limit]") {
  ClientRateLimiter limiter({/*rate_per_s=*/2, /*burst=*/3});
  const double t = 1000;
  CHECK_FALSE(limiter.admit("a", t));
  CHECK_FALSE(limiter.admit("a", t));
  CHECK_FALSE(limiter.admit("a", t));
  const auto wait = limiter.admit("a", t);
  REQUIRE(wait);
  CHECK(*wait == Approx(0.5));
  CHECK_FALSE(limiter.admit("a", t + 0.5));  // one request refilled
  CHECK(limiter.admit("a", t + 0.5));
}

TEST_CASE("rate_limiter_keeps_tokens_independent", "[rate_limit]") {
  ClientRateLimiter limiter({1, 1});
  CHECK_FALSE(limiter.admit("noisy", 0));
  CHECK(limiter.admit("noisy", 0));
  CHECK(limiter.admit("noisy", 0.1));
  CHECK_FALSE(limiter.admit("quiet", 0.1));
}

TEST_CASE("rate_limiter_refills_no_more_than_the_burst", "[rate_limit]") {
  ClientRateLimiter limiter({10, 2});
  CHECK_FALSE(limiter.admit("a", 0));
  CHECK_FALSE(limiter.admit("a", 3600));  // an hour idle still gives only `burst`
  CHECK_FALSE(limiter.admit("a", 3600));
  CHECK(limiter.admit("a", 3600));
}

TEST_CASE("rate_limiter_with_no_rate_admits_everything", "[rate_limit]") {
  ClientRateLimiter limiter({});
  CHECK_FALSE(limiter.enabled());
  for (int i = 0; i < 1000; ++i) CHECK_FALSE(limiter.admit("a", 0));
  CHECK(limiter.tracked_tokens() == 0);
}

TEST_CASE("rate_limiter_bounds_its_memory_dropping_refilled_then_idle_buckets", "[rate_limit]") {
  ClientRateLimiter limiter({1, 1, /*max_tokens=*/4});
  for (int i = 0; i < 4; ++i) limiter.admit("t" + std::to_string(i), 0);
  CHECK(limiter.tracked_tokens() == 4);
  limiter.admit("late", 0.5);  // none refilled yet: the idle half goes
  CHECK(limiter.tracked_tokens() == 3);
  limiter.admit("later", 0.6);
  CHECK(limiter.tracked_tokens() == 4);
  limiter.admit("last", 10);  // all refilled: all dropped, as good as new
  CHECK(limiter.tracked_tokens() == 1);
}

TEST_CASE("rate_limiter_rejects_a_rate_without_a_burst", "[rate_limit]") {
  CHECK_THROWS_AS(ClientRateLimiter({5, 0}), InvalidInput);
  CHECK_THROWS_AS(ClientRateLimiter({5, 5, 0}), InvalidInput);
}

}  // namespace fedleaf::server
