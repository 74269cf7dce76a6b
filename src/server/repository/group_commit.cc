#include "server/repository/group_commit.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>
#include <utility>

namespace fedleaf::server {

GroupCommit::GroupCommit(Step commit, Step sync, ServerMetrics& metrics,
                         std::shared_ptr<spdlog::logger> logger, Step on_failure)
    : commit_(std::move(commit)),
      sync_(std::move(sync)),
      metrics_(metrics),
      logger_(std::move(logger)),
      on_failure_(std::move(on_failure)),
      committer_([this] { run(); }) {}

GroupCommit::~GroupCommit() { stop(); }

void GroupCommit::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (committer_.joinable()) committer_.join();
}

void GroupCommit::after_commit(Release release) { enqueue(std::move(release), false); }
void GroupCommit::after_durable(Release release) { enqueue(std::move(release), true); }

std::optional<std::string> GroupCommit::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void GroupCommit::enqueue(Release release, bool durable) {
  std::unique_lock lock(mutex_);
  if (failure_ || stopped_) {
    lock.unlock();
    release(false);
    return;
  }
  (durable ? durable_queue_ : committed_queue_).push_back(std::move(release));
  lock.unlock();
  wake_.notify_one();
}

bool GroupCommit::run_step(const Step& step, const char* what, std::size_t waiters) {
  try {
    const auto start = std::chrono::steady_clock::now();
    step();
    metrics_.observe_phase(
        what, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return true;
  } catch (const std::exception& e) {
    if (logger_) {
      logger_->critical(
          "event=group_commit_failed step={} waiters={} error=\"{}\" action=\"answering 503 "
          "and stopping: a restart rebuilds from the store\"",
          what, waiters, e.what());
    }
    std::lock_guard lock(mutex_);
    failure_ = std::string(what) + " failed: " + e.what();
    return false;
  }
}

void GroupCommit::run() {
  std::vector<Release> committed;
  std::vector<Release> durable;
  for (;;) {
    bool ok = true;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] {
        return !committed_queue_.empty() || !durable_queue_.empty() || stopping_;
      });
      if (committed_queue_.empty() && durable_queue_.empty()) {  // stopping, all released
        stopped_ = true;
        return;
      }
      // Every waiter taken here was queued after its operation, and before the steps below
      // start: they cover all of them.
      committed.swap(committed_queue_);
      durable.swap(durable_queue_);
      ok = !failure_;
    }
    const bool failed_before = !ok;
    const std::size_t waiters = committed.size() + durable.size();
    ok = ok && run_step(commit_, "commit", waiters);
    for (Release& release : committed) release(ok);
    if (!durable.empty()) {
      ok = ok && run_step(sync_, "sync", durable.size());
      for (Release& release : durable) release(ok);
    }
    if (ok) metrics_.count_group_commit(waiters, !durable.empty());
    // Once, after the failing batch's answers are on their way (later batches find it failed).
    if (!ok && !failed_before && on_failure_) on_failure_();
    committed.clear();
    durable.clear();
  }
}

}  // namespace fedleaf::server
