#include "server/repository/deadline_ticker.h"

#include <chrono>
#include <utility>

namespace fedleaf::server {

DeadlineTicker::DeadlineTicker(double interval_s, std::function<void()> tick)
    : tick_(std::move(tick)), thread_([this, interval_s] { run(interval_s); }) {}

DeadlineTicker::~DeadlineTicker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_requested_.notify_all();
  thread_.join();
}

void DeadlineTicker::run(double interval_s) {
  const auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(interval_s));
  std::unique_lock lock(mutex_);
  while (!stop_requested_.wait_for(lock, interval, [this] { return stopping_; })) {
    lock.unlock();
    tick_();
    lock.lock();
  }
}

}  // namespace fedleaf::server
