// StoreBatch: the open batch of a group commit — one store transaction that collects many
// all-or-nothing steps (nested transactions) until commit() ends it.
//
//   StoreBatch batch(store, [&] { drop_in_memory_state(); });
//   batch.step("claim", [&] { store.insert_task(...); });  // a failure undoes only this step
//   batch.step("create", [&] { ... }, Durability::kFull);  // committed and synced
//   batch.commit(/*sync=*/true);                           // durable past power loss
//
// Why a batch: one commit (and one fsync) per batch of requests instead of per request; every
// answer that reveals a step waits for the batch's commit (see TaskRepository "Crash safety").
// Not thread-safe: TaskRepository's mutex guards it.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "server/store/store.h"
#include "server/util/server_errors.h"

namespace fedleaf::server {

class StoreBatch {
 public:
  // `on_abandon` runs when the batch is rolled back whole (a failed commit, or a step whose
  // rollback failed): state kept beside the store may hold what the store lost.
  StoreBatch(Store& store, std::function<void()> on_abandon)
      : store_(store), on_abandon_(std::move(on_abandon)) {}

  // Runs `body` as one step of the batch (opened on demand). A failure rolls back only the step
  // and surfaces as Unavailable naming `what` (Conflict and NotFound pass through unchanged).
  // Durability::kFull then commits the batch and syncs the store (a failure there abandons it).
  template <class Body>
  void step(const std::string& what, Body&& body, Durability durability = Durability::kNormal) {
    try {
      open();
      store_.begin_nested();
      try {
        body();
      } catch (...) {
        rollback_step();
        throw;
      }
      store_.commit_nested();
      if (durability == Durability::kFull) commit(true);
    } catch (const Conflict&) {
      throw;
    } catch (const NotFound&) {
      throw;
    } catch (const std::exception& e) {
      throw Unavailable(what + ": store failure: " + e.what());
    }
  }

  // Commits the batch if one is open (a killed process keeps it); with `sync` the store is then
  // synced (power loss keeps it). A failed commit abandons the batch and rethrows.
  void commit(bool sync);
  bool is_open() const { return open_; }

 private:
  void open();
  void rollback_step();
  void abandon();

  Store& store_;
  std::function<void()> on_abandon_;
  bool open_ = false;
};

}  // namespace fedleaf::server
