// A TaskRepository over SQLite in memory with a fake clock, for the task_repository_*_test.cc
// cases: claims that must hand out a task or must retry, uploads, parked claims and status.
//
//   RepositoryHarness h;
//   const CreatedPopulation p = h.repo.create_population(test_spec("p", 2, 2, 2));
//   const TaskAssignment task = h.claim_task(p);
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "server/api/wire_json.h"
#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "tests/server/server_fixtures.h"

namespace fedleaf::server {

struct RepositoryHarness {
  SqliteStore store{":memory:"};
  FakeClock clock;
  ServerMetrics metrics;
  int woken = 0;  // wake-ups of the claims park_claim() parked (declared before repo: outlives it)
  TaskRepository repo{store, clock, metrics, TaskRepositoryOptions{}};

  TaskAssignment claim_task(const CreatedPopulation& p) {
    ClaimOutcome outcome = repo.claim(p.id, p.client_token);
    REQUIRE(std::holds_alternative<TaskAssignment>(outcome));
    return std::get<TaskAssignment>(outcome);
  }
  RetryLater claim_retry(const CreatedPopulation& p) {
    ClaimOutcome outcome = repo.claim(p.id, p.client_token);
    REQUIRE(std::holds_alternative<RetryLater>(outcome));
    return std::get<RetryLater>(outcome);
  }
  UploadOutcome upload(const TaskAssignment& task, const std::string& body) {
    return repo.upload(task.task_id, task.lease_token, body);
  }
  // Claims (the answer must be RetryLater) and parks that claim until its wake epoch passes.
  void park_claim(const CreatedPopulation& p) {
    const RetryLater retry = claim_retry(p);
    repo.waiters().park(p.id, retry.wake_epoch, [this] { ++woken; });
  }
  nlohmann::json status(const CreatedPopulation& p) { return status_json(repo.status(p.id)); }
};

inline std::string model_of(TaskRepository& repo, const std::string& id, int round) {
  return *repo.model(id, round).bytes;
}

}  // namespace fedleaf::server
