#include "server/repository/round_closer.h"

#include <utility>

namespace fedleaf::server {

RoundCloser::RoundCloser() : thread_([this] { run(); }) {}

RoundCloser::~RoundCloser() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void RoundCloser::post(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(job));
  }
  changed_.notify_all();
}

void RoundCloser::wait_idle() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return queue_.empty() && !running_job_; });
}

void RoundCloser::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and every job has run
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    running_job_ = true;
    lock.unlock();
    job();
    lock.lock();
    running_job_ = false;
    changed_.notify_all();
  }
}

}  // namespace fedleaf::server
