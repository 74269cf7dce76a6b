#include "server/repository/round_closer.h"

#include <catch2/catch.hpp>
#include <mutex>
#include <vector>

namespace fedleaf::server {

TEST_CASE("round_closer_runs_jobs_in_the_order_posted_and_wait_idle_waits_for_them",
          "[round_closer]") {
  RoundCloser closer;
  std::mutex mutex;
  std::vector<int> ran;
  for (int i = 0; i < 5; ++i) {
    closer.post([&, i] {
      std::lock_guard lock(mutex);
      ran.push_back(i);
    });
  }

  closer.wait_idle();

  std::lock_guard lock(mutex);
  CHECK(ran == std::vector<int>{0, 1, 2, 3, 4});
}

TEST_CASE("round_closer_destructor_runs_the_jobs_still_queued", "[round_closer]") {
  std::vector<int> ran;
  {
    RoundCloser closer;
    for (int i = 0; i < 3; ++i) closer.post([&ran, i] { ran.push_back(i); });
  }

  CHECK(ran == std::vector<int>{0, 1, 2});
}

}  // namespace fedleaf::server
