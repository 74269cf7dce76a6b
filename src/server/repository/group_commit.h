// GroupCommit: commits the repository's open batch of operations and syncs the store on one
// thread, releasing each answer once the work behind it is committed (claims) or durable
// (uploads) — one commit and one sync for every operation that arrived while the previous ones
// ran.
//
//   GroupCommit group([&repo] { repo.commit_batch(); }, [&store] { store.sync(); }, metrics,
//                     logger);
//   repo.upload(...);                             // in the open batch, not yet committed
//   group.after_durable([=](bool durable) {       // runs on the committer thread
//     post(executor, [=] { durable ? send(answer) : send(error_503); });
//   });
//
// Contract: release(true) of after_commit() runs only after a call of `commit` that *started
// after* after_commit() was called has returned; release(true) of after_durable() only after
// such a `commit` and then a `sync` have returned. So every operation done before the call is
// committed (survives a killed process), respectively durable (survives power loss), when its
// answer is released. Callers queue while a step runs and share the next one: under load one
// commit and one sync serve as many answers as arrived meanwhile; alone, an answer costs one
// commit and one sync, as before group commit.
//
// Failure: when `commit` or `sync` throws, the waiting answers get release(false) (an answer
// released by a successful commit before a failed sync keeps its true), and so does every later
// call: after a failed fsync the state of earlier writes is unknown (the kernel may drop the
// dirty pages and report success next time), so nothing can be promised until a restart
// rebuilds from what the store holds. The failure is logged (level critical), failure() names
// it from then on (the server's /healthz answers 503 with it), and the `on_failure` callback runs
// once, on the committer thread (the server stops and exits non-zero: docs/deploy.md "Runbook").
//
// Threading: one committer thread, started by the constructor and joined by stop() or the
// destructor, which first commit, sync and release everything queued. `release` callbacks run on
// that thread and must be quick (hand the answer to its connection's executor); they must not call
// after_commit()/after_durable(). Both are thread-safe. `sync` must be safe to call while
// other threads use the store (Store::sync() is); `commit` takes the repository's lock itself.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/util/commit_gate.h"
#include "server/util/server_metrics.h"

namespace spdlog {
class logger;
}

namespace fedleaf::server {

class GroupCommit final : public CommitGate {
 public:
  using Step = std::function<void()>;

  // `metrics` (commits, syncs and answers released) must outlive this object; `logger` may be
  // null; `on_failure` (may be empty) runs once, on the committer thread, after the first failed
  // step has been logged and the waiting answers released — it must be quick (post a stop).
  GroupCommit(Step commit, Step sync, ServerMetrics& metrics,
              std::shared_ptr<spdlog::logger> logger, Step on_failure = {});
  ~GroupCommit();
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Calls release(true) once every operation done before this call is committed; release(false)
  // when that cannot be promised.
  void after_commit(Release release) override;
  // Calls release(true) once every operation done before this call is committed and synced
  // (durable); release(false) when that cannot be promised.
  void after_durable(Release release) override;
  // Why nothing can be promised any more ("commit failed: <the store's error>"), once a step
  // has failed; nullopt before. Thread-safe.
  std::optional<std::string> failure() const;
  // Commits, syncs and releases everything queued, then joins the committer (what the destructor
  // does; idempotent): from then on every after_commit()/after_durable() gets release(false) at
  // once. The server calls it once its I/O threads are done and before the HTTP server (whose
  // sessions the releases hold) is destroyed.
  void stop();

 private:
  void enqueue(Release release, bool durable);
  void run();
  // Runs `step`; on failure logs it, records failure_ and returns false.
  bool run_step(const Step& step, const char* what, std::size_t waiters);

  Step commit_;
  Step sync_;
  ServerMetrics& metrics_;
  std::shared_ptr<spdlog::logger> logger_;
  Step on_failure_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Release> committed_queue_;  // guarded by mutex_
  std::vector<Release> durable_queue_;    // guarded by mutex_
  bool stopping_ = false;                 // guarded by mutex_
  bool stopped_ = false;                  // guarded by mutex_: the committer has returned
  std::optional<std::string> failure_;    // guarded by mutex_; set once, by the first failure
  std::thread committer_;                 // last: starts after every other member is ready
};

}  // namespace fedleaf::server
