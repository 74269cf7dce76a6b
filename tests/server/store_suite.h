// The helpers of the one Store suite (store_*_test.cc, run on every backend of
// store_backends.h): population "p" with its round 0, a claim, a train upload and a round close,
// each in a transaction of its own.
//
//   create(store, "p");
//   const std::optional<ClaimedTask> task = claim(store, TaskKind::kTrain, 100);
//   accept(store, train_upload(*task, "sha", 101));
#pragma once

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "server/store/store.h"
#include "tests/server/server_fixtures.h"

namespace fedleaf::server::store_suite {

inline PopulationRecord population(const std::string& id) {
  PopulationRecord p = test::test_population_record(id, "{\"updates\": {}}");
  p.settings.server_optimizer_json = R"({"learning_rate":0.5,"momentum":0.9,"type":"sgd"})";
  p.settings.buffered_json = R"({"buffer_size":2})";
  return p;
}

inline RoundRecord round_record(const std::string& id, int number) {
  RoundRecord r;
  r.population_id = id;
  r.number = number;
  r.started_at = 100 + number;
  r.deadline = 160 + number;
  return r;
}

inline void create(Store& store, const std::string& id) {
  StoreTransaction tx(store, Durability::kFull);
  store.create_population(population(id), round_record(id, 0), {id, 0, "etag-0", "model-0"});
  tx.commit();
}

// Claims a task of population "p", round 0, in a transaction of its own.
inline std::optional<ClaimedTask> claim(Store& store, TaskKind kind, double now, int limit = 5,
                                        const std::string& hash = "lease-hash") {
  StoreTransaction tx(store, Durability::kNormal);
  auto claimed = store.claim_task({"p", 0, kind, limit, now, now + 5, hash});
  tx.commit();
  return claimed;
}

inline AcceptRequest train_upload(const ClaimedTask& task, const std::string& sha, double now) {
  AcceptRequest r;
  r.task_id = task.task_id;
  r.lease_id = task.lease_id;
  r.result_sha256 = sha;
  r.now = now;
  r.train_bytes = "result-" + sha;
  r.delta.examples = 10;
  r.delta.loss_sum = 5;
  r.delta.accuracy_sum = 8;
  r.delta.accuracy_examples = 10;
  r.delta.upload_bytes = 100;
  r.receipt_body = [](int reports) { return "{\"reports\":" + std::to_string(reports) + "}"; };
  return r;
}

inline AcceptOutcome accept(Store& store, const AcceptRequest& request) {
  StoreTransaction tx(store, Durability::kNormal);
  AcceptOutcome outcome = store.accept_result(request);
  tx.commit();
  return outcome;
}

// A claim rolled back leaves no lease: its task is gone, or (a task PostgresStore created in a
// chunk, committed on its own) there and never leased.
inline bool never_leased(Store& store, std::int64_t task_id) {
  const std::optional<TaskRecord> task = store.find_task(task_id);
  return store.list_leases(task_id).empty() && (!task || task->lease_id == 0);
}

// Closes round `number` of "p" and opens the next with its model.
inline void close(Store& store, int number, double now) {
  StoreTransaction tx(store, Durability::kFull);
  std::optional<RoundRecord> locked = store.lock_open_round("p", number);
  REQUIRE(locked);
  RoundCloseWrite write;
  write.closed = *locked;
  write.closed.status = RoundStatus::kClosed;
  write.closed.closed_at = now;
  write.closed.robust_json = R"({"capped":1})";
  write.population = population("p");
  write.population.current_round = number + 1;
  write.opened = round_record("p", number + 1);
  write.model = ModelRecord{"p", number + 1, "etag-" + std::to_string(number + 1), "model"};
  store.close_round(write);
  tx.commit();
}

}  // namespace fedleaf::server::store_suite
