// RoundCloser: the thread that closes training rounds off the request path — the repository
// posts a close (finalize, encode, hash, write the model file, then the close step under its
// lock) and answers the request that completed the round at once.
//
//   RoundCloser closer;
//   closer.post([&] { close_round_of("spam"); });   // runs on the closer's thread, in order
//   closer.wait_idle();                              // every close posted so far has run
//
// Jobs run one at a time, in the order posted, and must not throw (TaskRepository's close job
// logs its failures). The destructor runs the jobs still queued, then joins the thread.
// post() and wait_idle() are thread-safe; a job must not call wait_idle() (it would wait for
// itself).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace fedleaf::server {

class RoundCloser {
 public:
  RoundCloser();
  ~RoundCloser();
  RoundCloser(const RoundCloser&) = delete;
  RoundCloser& operator=(const RoundCloser&) = delete;

  void post(std::function<void()> job);
  // Returns once every job posted before the call has run.
  void wait_idle();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;  // guarded by mutex_
  bool running_job_ = false;                 // guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::thread thread_;                       // last: started once the rest is constructed
};

}  // namespace fedleaf::server
