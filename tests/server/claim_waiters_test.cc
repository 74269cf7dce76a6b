// ClaimWaiters: parked claims are woken once per notify, never lost between a claim and its park.
#include "server/repository/claim_waiters.h"

#include <catch2/catch.hpp>

namespace fedleaf::server {

TEST_CASE("notify_wakes_every_waiter_of_the_population_once", "[claim_waiters]") {
  ClaimWaiters waiters;
  int spam = 0, other = 0;
  waiters.park("spam", waiters.epoch("spam"), [&] { ++spam; });
  waiters.park("spam", waiters.epoch("spam"), [&] { ++spam; });
  waiters.park("other", waiters.epoch("other"), [&] { ++other; });
  CHECK(waiters.waiting() == 3);

  waiters.notify("spam");
  waiters.notify("spam");

  CHECK(spam == 2);
  CHECK(other == 0);
  CHECK(waiters.waiting("spam") == 0);
  CHECK(waiters.waiting() == 1);
  CHECK(waiters.epoch("spam") == 2);
}

TEST_CASE("park_with_a_stale_epoch_wakes_at_once", "[claim_waiters]") {
  ClaimWaiters waiters;
  const std::uint64_t seen = waiters.epoch("spam");
  waiters.notify("spam");  // a task appeared between the claim and its park
  int woken = 0;

  const std::uint64_t ticket = waiters.park("spam", seen, [&] { ++woken; });

  CHECK(woken == 1);
  CHECK(waiters.waiting() == 0);
  CHECK_FALSE(waiters.cancel("spam", ticket));
}

TEST_CASE("cancel_removes_a_parked_waiter_and_reports_a_woken_one", "[claim_waiters]") {
  ClaimWaiters waiters;
  int woken = 0;
  const auto first = waiters.park("spam", 0, [&] { ++woken; });
  const auto second = waiters.park("spam", 0, [&] { ++woken; });

  CHECK(waiters.cancel("spam", first));
  CHECK_FALSE(waiters.cancel("spam", first));
  CHECK_FALSE(waiters.cancel("nobody", second));
  waiters.notify("spam");

  CHECK(woken == 1);
  CHECK_FALSE(waiters.cancel("spam", second));
  CHECK(waiters.waiting() == 0);
}

}  // namespace fedleaf::server
