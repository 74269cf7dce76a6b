// DeadlineTicker: calls `tick` every interval on a thread of its own, so round deadlines and
// lease expiries are acted on when no request comes (the repository's tick(): close overdue
// rounds, wake the claims waiting for an expired lease). Independent of the transport.
//
//   DeadlineTicker ticker(1.0, [&repository] { repository.tick(); });
//   ...                 // the destructor stops the thread (waits for a tick in progress)
//
// `tick` must not throw (TaskRepository::tick() logs its failures).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace fedleaf::server {

class DeadlineTicker {
 public:
  DeadlineTicker(double interval_s, std::function<void()> tick);
  ~DeadlineTicker();
  DeadlineTicker(const DeadlineTicker&) = delete;
  DeadlineTicker& operator=(const DeadlineTicker&) = delete;

 private:
  void run(double interval_s);

  std::function<void()> tick_;
  std::mutex mutex_;
  std::condition_variable stop_requested_;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the rest is constructed
};

}  // namespace fedleaf::server
