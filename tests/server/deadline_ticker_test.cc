// DeadlineTicker: ticks repeatedly on its own thread and stops when destroyed.
#include "server/repository/deadline_ticker.h"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>

namespace fedleaf::server {

TEST_CASE("deadline_ticker_ticks_until_destroyed", "[deadline_ticker]") {
  std::mutex mutex;
  std::condition_variable ticked;
  int ticks = 0;
  {
    DeadlineTicker ticker(0.001, [&] {
      std::lock_guard lock(mutex);
      ++ticks;
      ticked.notify_all();
    });
    std::unique_lock lock(mutex);
    ticked.wait(lock, [&] { return ticks >= 3; });
  }  // the destructor stops and joins the thread: `ticks` is no longer touched
  const int after_stop = ticks;
  CHECK(after_stop >= 3);
}

}  // namespace fedleaf::server
