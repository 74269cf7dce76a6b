// Store: the persistent state of the task repository, behind an interface so that backends
// (SQLite today, PostgreSQL planned) pass one test suite.
//
//   SqliteStore store(":memory:");
//   {
//     StoreTransaction tx(store, Durability::kFull);
//     store.insert_population(population);
//     store.insert_round(round0);
//     tx.commit();                  // without commit(), the destructor rolls back
//   }
//   std::optional<PopulationRecord> p = store.find_population("spam");
//
// Contracts:
// - Every state change of the repository happens inside one transaction (begin .. commit);
//   a transaction either commits whole or leaves no trace. Durability::kFull makes the commit
//   survive power loss before commit() returns (population creation, round closes); kNormal
//   survives a killed process when commit() returns and power loss once a later sync() has
//   returned (accepted reports, whose answers wait for that sync: group commit; claims, whose
//   loss costs at most a lease). Commits are ordered: after power loss the store holds a prefix
//   of them, never a later one without an earlier one.
// - Not thread-safe: the caller serialises access (TaskRepository holds one mutex) — except
//   sync(), which may run on another thread while the store is in use.
// - Blobs (models, results, checkpoints) are byte strings held in std::string.
// - Errors: Conflict when an insert collides with an existing key, NotFound when an update
//   names a row that does not exist, fedleaf::Error for storage failures.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fedleaf::server {

enum class Durability { kNormal, kFull };

struct PopulationRecord {
  std::string id;
  std::string plan_json;
  std::string client_token_hash;  // hex SHA-256 of the population's client token
  int rounds = 1;                 // training rounds; models 0..rounds exist at the end
  int clients_per_round = 1;      // reports that close a round at once
  int min_reports = 1;            // reports that close a round at its deadline
  double round_deadline_s = 600;
  double lease_s = 120;
  int train_tasks_per_round = 1;  // clients_per_round plus over-selection
  int eval_tasks_per_round = 0;
  std::string state = "running";  // "running" | "finished"
  int current_round = 0;
  double created_at = 0;
};

struct RoundRecord {
  std::string population_id;
  int number = 0;
  std::string status = "open";  // "open" | "closed"
  double started_at = 0;
  double deadline = 0;
  double closed_at = 0;  // 0 while open
  int train_tasks = 0;   // train tasks created so far (each created on a claim)
  int eval_tasks = 0;
  // Train reports accepted, their examples, Σ examples·loss, Σ examples·accuracy over the
  // reports that carried an accuracy, and the bytes of the accepted uploads.
  int reports = 0;
  double examples = 0;
  double loss_sum = 0;
  double accuracy_sum = 0;
  double accuracy_examples = 0;
  std::int64_t upload_bytes = 0;
  // Evaluate reports on this round's model: count, examples, {"metric": Σ examples·value}.
  int eval_reports = 0;
  double eval_examples = 0;
  std::string eval_sums_json = "{}";
  // Robust aggregation at the round's close: {"clipped": {tensor: reports}, "capped": reports,
  // "withheld_nonfinite": elements}; "{}" while open.
  std::string robust_json = "{}";
};

struct ModelRecord {
  std::string population_id;
  int round = 0;
  std::string etag;   // hex SHA-256 of bytes
  std::string bytes;  // safetensors
};

struct TaskRecord {
  std::int64_t id = 0;  // assigned by insert_task
  std::string population_id;
  int round = 0;
  std::string kind = "train";    // "train" | "evaluate"
  std::string state = "leased";  // "leased" | "done"
  std::int64_t lease_id = 0;     // current lease
  double lease_expires_at = 0;
  // Filled when the task is done: the lease that completed it and its receipt (what its answer
  // needs beyond this row; older rows hold the whole first answer).
  std::int64_t completed_lease_id = 0;
  std::string result_sha256;
  int result_status = 0;
  std::string result_body;
};

struct LeaseRecord {
  std::int64_t id = 0;  // assigned by insert_lease
  std::int64_t task_id = 0;
  std::string token_hash;
  double expires_at = 0;
};

// An accepted train result, kept until its round closes so the round's aggregate can be rebuilt
// after a crash. seq orders results within a round (1, 2, ...).
struct ResultRecord {
  std::string population_id;
  int round = 0;
  std::int64_t seq = 0;
  std::int64_t task_id = 0;
  std::string bytes;
};

// RoundAggregator::checkpoint() of a round after folding results 1..seq.
struct CheckpointRecord {
  std::string population_id;
  int round = 0;
  std::int64_t seq = 0;
  std::string bytes;
};

class Store {
 public:
  virtual ~Store() = default;

  // Transactions do not nest. Prefer StoreTransaction.
  virtual void begin(Durability durability) = 0;
  virtual void commit() = 0;
  virtual void rollback() = 0;
  // A nested step inside the open transaction (a savepoint): commit_nested() keeps its changes
  // in the enclosing transaction, rollback_nested() undoes only them. Steps do not nest further.
  // This lets many all-or-nothing operations share one commit (group commit).
  virtual void begin_nested() = 0;
  virtual void commit_nested() = 0;
  virtual void rollback_nested() = 0;
  // Makes every transaction committed before the call survive power loss, as a kFull commit
  // would. Thread-safe with respect to every other method (it may run while another thread
  // holds a transaction open), so that one sync serves many commits outside the caller's lock.
  // Throws fedleaf::Error when the storage reports a failure (durability is then unknown).
  virtual void sync() = 0;

  virtual void insert_population(const PopulationRecord& population) = 0;
  virtual std::optional<PopulationRecord> find_population(const std::string& id) = 0;
  virtual std::vector<PopulationRecord> list_populations() = 0;  // ordered by id
  // Writes state and current_round.
  virtual void update_population(const PopulationRecord& population) = 0;

  virtual void insert_round(const RoundRecord& round) = 0;
  virtual std::optional<RoundRecord> find_round(const std::string& population_id, int number) = 0;
  virtual std::vector<RoundRecord> list_rounds(const std::string& population_id) = 0;
  // Writes every field but the key.
  virtual void update_round(const RoundRecord& round) = 0;

  // Models are immutable: inserting one twice is a Conflict.
  virtual void insert_model(const ModelRecord& model) = 0;
  virtual std::optional<ModelRecord> find_model(const std::string& population_id, int round) = 0;

  // Returns the new task's id.
  virtual std::int64_t insert_task(const TaskRecord& task) = 0;
  virtual std::optional<TaskRecord> find_task(std::int64_t id) = 0;
  virtual void update_task(const TaskRecord& task) = 0;
  // A leased, not done task of this round and kind whose lease expired at or before `now`,
  // earliest expiry first.
  virtual std::optional<TaskRecord> find_expired_task(const std::string& population_id, int round,
                                                      const std::string& kind, double now) = 0;
  // Earliest lease expiry after `now` among the round's leased tasks.
  virtual std::optional<double> next_lease_expiry(const std::string& population_id, int round,
                                                  double now) = 0;
  // Leased tasks whose lease is still valid at `now`, over every population.
  virtual std::int64_t count_active_leases(double now) = 0;

  // Returns the new lease's id.
  virtual std::int64_t insert_lease(const LeaseRecord& lease) = 0;
  virtual std::vector<LeaseRecord> list_leases(std::int64_t task_id) = 0;  // ordered by id

  virtual void insert_result(const ResultRecord& result) = 0;
  // Results of the round with seq > after_seq, in seq order.
  virtual std::vector<ResultRecord> list_results(const std::string& population_id, int round,
                                                 std::int64_t after_seq) = 0;
  virtual void delete_results(const std::string& population_id, int round) = 0;

  // Inserts or replaces the round's checkpoint.
  virtual void put_checkpoint(const CheckpointRecord& checkpoint) = 0;
  virtual std::optional<CheckpointRecord> find_checkpoint(const std::string& population_id,
                                                          int round) = 0;
  virtual void delete_checkpoint(const std::string& population_id, int round) = 0;

  // Rejected uploads per population and reason.
  virtual void add_rejection(const std::string& population_id, const std::string& reason) = 0;
  virtual std::map<std::string, std::int64_t> rejections(const std::string& population_id) = 0;
};

// Scoped transaction: begin() on construction, rollback() on destruction unless committed.
class StoreTransaction {
 public:
  StoreTransaction(Store& store, Durability durability) : store_(store) {
    store_.begin(durability);
  }
  StoreTransaction(const StoreTransaction&) = delete;
  StoreTransaction& operator=(const StoreTransaction&) = delete;
  ~StoreTransaction() {
    if (!done_) {
      try {
        store_.rollback();
      } catch (...) {  // a failed rollback leaves SQLite to roll back on the next begin
      }
    }
  }
  void commit() {
    store_.commit();
    done_ = true;
  }

 private:
  Store& store_;
  bool done_ = false;
};

}  // namespace fedleaf::server
