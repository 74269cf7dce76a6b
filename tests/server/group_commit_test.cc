// GroupCommit: answers are released only after a commit (and sync) that started after they were
// queued; waiters that queue during a step share the next one; failures are sticky.
#include "server/repository/group_commit.h"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace fedleaf::server {
namespace {

// Counts operations, commits and syncs; a commit records how many operations it covered and a
// sync how many commits it covered, so a released answer can check that its operation is in.
struct FakeStore {
  std::mutex mutex;
  int operations = 0;
  int committed_operations = 0;
  int durable_operations = 0;
  int commits = 0;
  int syncs = 0;

  int operate() {
    std::lock_guard lock(mutex);
    return ++operations;
  }
  void commit() {
    std::lock_guard lock(mutex);
    ++commits;
    committed_operations = operations;
  }
  void sync() {
    std::lock_guard lock(mutex);
    ++syncs;
    durable_operations = committed_operations;
  }
};

// Blocks the first sync until open() is called, and tells when that sync has started.
class Gate {
 public:
  void wait_at_first_call() {
    std::unique_lock lock(mutex_);
    if (calls_++ > 0) return;
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
  }
  void wait_until_first_call() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return calls_ > 0; });
  }
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int calls_ = 0;
  bool open_ = false;
};

}  // namespace

TEST_CASE("group_commit_releases_an_answer_only_after_its_operation_is_committed_and_synced",
          "[group_commit]") {
  FakeStore store;
  ServerMetrics metrics;
  std::vector<std::future<bool>> released;
  std::vector<std::promise<bool>> promises(40);
  {
    GroupCommit group([&] { store.commit(); }, [&] { store.sync(); }, metrics, nullptr);
    for (int i = 0; i < 40; ++i) {
      released.push_back(promises[i].get_future());
      const int operation = store.operate();
      const bool durable = i % 2 == 0;
      auto release = [&store, &promises, i, operation, durable](bool ok) {
        std::lock_guard lock(store.mutex);
        const int covered = durable ? store.durable_operations : store.committed_operations;
        promises[i].set_value(ok && covered >= operation);
      };
      if (durable) {
        group.after_durable(release);
      } else {
        group.after_commit(release);
      }
    }
    for (auto& f : released) CHECK(f.get());
  }

  CHECK(store.commits >= 1);
  CHECK(store.syncs >= 1);
  CHECK(store.commits <= 40);
  CHECK(metrics.render(0, 0).find("fedleaf_group_commit_answers_total 40") != std::string::npos);
}

TEST_CASE("group_commit_waiters_queued_during_a_sync_share_the_next_commit_and_sync",
          "[group_commit]") {
  FakeStore store;
  ServerMetrics metrics;
  Gate gate;
  std::vector<std::promise<bool>> promises(11);
  {
    GroupCommit group([&] { store.commit(); },
                      [&] {
                        gate.wait_at_first_call();
                        store.sync();
                      },
                      metrics, nullptr);
    group.after_durable([&](bool ok) { promises[0].set_value(ok); });
    gate.wait_until_first_call();
    for (int i = 1; i < 11; ++i) {
      group.after_durable([&promises, i](bool ok) { promises[i].set_value(ok); });
    }
    gate.open();
    for (auto& p : promises) CHECK(p.get_future().get());
  }

  CHECK(store.commits == 2);
  CHECK(store.syncs == 2);
  const std::string text = metrics.render(0, 0);
  CHECK(text.find("fedleaf_group_commits_total 2") != std::string::npos);
  CHECK(text.find("fedleaf_group_commit_syncs_total 2") != std::string::npos);
  CHECK(text.find("fedleaf_group_commit_answers_total 11") != std::string::npos);
  CHECK(text.find("fedleaf_phase_seconds_count{phase=\"commit\"} 2") != std::string::npos);
  CHECK(text.find("fedleaf_phase_seconds_count{phase=\"sync\"} 2") != std::string::npos);
}

TEST_CASE("group_commit_answers_that_need_only_a_commit_do_not_wait_for_a_sync", "[group_commit]") {
  FakeStore store;
  ServerMetrics metrics;
  std::promise<bool> released;
  {
    GroupCommit group([&] { store.commit(); }, [&] { store.sync(); }, metrics, nullptr);
    store.operate();
    group.after_commit([&](bool ok) { released.set_value(ok); });
    CHECK(released.get_future().get());
  }

  CHECK(store.commits == 1);
  CHECK(store.syncs == 0);
}

TEST_CASE("group_commit_a_failed_sync_fails_its_batch_and_every_later_answer", "[group_commit]") {
  ServerMetrics metrics;
  Gate gate;
  std::promise<bool> committed, durable, later;
  GroupCommit group([] {},
                    [&] {
                      gate.wait_at_first_call();
                      throw std::runtime_error("EIO");
                    },
                    metrics, nullptr);
  group.after_durable([&](bool ok) { durable.set_value(ok); });
  gate.wait_until_first_call();
  gate.open();
  CHECK_FALSE(durable.get_future().get());

  group.after_commit([&](bool ok) { committed.set_value(ok); });
  group.after_durable([&](bool ok) { later.set_value(ok); });

  CHECK_FALSE(committed.get_future().get());
  CHECK_FALSE(later.get_future().get());
  CHECK(metrics.render(0, 0).find("fedleaf_group_commits_total 0") != std::string::npos);
}

TEST_CASE("group_commit_a_failed_commit_fails_both_kinds_of_answers", "[group_commit]") {
  ServerMetrics metrics;
  int syncs = 0;
  std::promise<bool> committed, durable;
  GroupCommit group([] { throw std::runtime_error("disk full"); }, [&] { ++syncs; }, metrics,
                    nullptr);
  group.after_commit([&](bool ok) { committed.set_value(ok); });
  group.after_durable([&](bool ok) { durable.set_value(ok); });

  CHECK_FALSE(committed.get_future().get());
  CHECK_FALSE(durable.get_future().get());
  CHECK(syncs == 0);
}

TEST_CASE("group_commit_names_its_failure_and_calls_on_failure_once", "[group_commit]") {
  ServerMetrics metrics;
  std::promise<void> first_failure;
  int failures = 0;
  std::promise<bool> first, later;
  GroupCommit group([] { throw std::runtime_error("database or disk is full"); }, [] {}, metrics,
                    nullptr,
                    [&] {
                      if (++failures == 1) first_failure.set_value();
                    });
  CHECK_FALSE(group.failure());

  group.after_commit([&](bool ok) { first.set_value(ok); });
  CHECK_FALSE(first.get_future().get());
  first_failure.get_future().get();
  group.after_durable([&](bool ok) { later.set_value(ok); });
  CHECK_FALSE(later.get_future().get());

  REQUIRE(group.failure());
  CHECK(*group.failure() == "commit failed: database or disk is full");
  CHECK(failures == 1);
}

TEST_CASE("group_commit_destructor_commits_syncs_and_releases_everything_queued",
          "[group_commit]") {
  FakeStore store;
  ServerMetrics metrics;
  int released = 0;
  {
    GroupCommit group([&] { store.commit(); }, [&] { store.sync(); }, metrics, nullptr);
    for (int i = 0; i < 25; ++i) {
      store.operate();
      group.after_durable([&](bool ok) { released += ok ? 1 : 0; });
    }
  }

  CHECK(released == 25);
  CHECK(store.durable_operations == 25);
}

TEST_CASE("group_commit_stop_releases_what_is_queued_then_refuses_at_once", "[group_commit]") {
  FakeStore store;
  ServerMetrics metrics;
  GroupCommit group([&] { store.commit(); }, [&] { store.sync(); }, metrics, nullptr);
  std::vector<bool> released;
  std::mutex mutex;
  const auto record = [&](bool ok) {
    std::lock_guard lock(mutex);
    released.push_back(ok);
  };
  store.operate();
  group.after_durable(record);

  group.stop();
  REQUIRE(released.size() == 1);
  CHECK(released[0]);
  CHECK(store.durable_operations == 1);

  group.after_commit(record);  // released false on the caller's thread: nothing commits any more
  REQUIRE(released.size() == 2);
  CHECK_FALSE(released[1]);
  CHECK_FALSE(group.failure());  // a stop is no failure
  group.stop();                  // idempotent (and the destructor after it)
}

}  // namespace fedleaf::server
