// Store: the persistent state of the task repository, behind an interface of *operations* —
// each one atomic on its own, so that several server instances can share one store (SQLite for
// one server, PostgreSQL for many; both pass the suite tests/server/store_*_test.cc).
//
//   SqliteStore store(":memory:");
//   {
//     StoreTransaction tx(store, Durability::kFull);
//     store.create_population(population, round0, model0);
//     tx.commit();                  // without commit(), the destructor rolls back
//   }
//   std::optional<ClaimedTask> c = store.claim_task({"spam", 0, TaskKind::kTrain, 5, now,
//                                                    now + 120, lease_token_hash});
//   AcceptOutcome a = store.accept_result({c->task_id, c->lease_id, sha, now, bytes, delta});
//
// Contracts:
// - Every state change of the repository happens inside one transaction (begin .. commit);
//   a transaction either commits whole or leaves no trace. Durability::kFull makes the commit
//   survive power loss before commit() returns (population creation, round closes); kNormal
//   survives a killed process when commit() returns and power loss once a later sync() has
//   returned (accepted reports, whose answers wait for that sync: group commit; claims, whose
//   loss costs at most a lease). Commits are ordered: after power loss the store holds a prefix
//   of them, never a later one without an earlier one.
// - The operations (claim_task, accept_result, lock_open_round + close_round) are atomic with
//   respect to other connections to the same store: two servers never lease the same task at
//   once, never accept two results for one lease, never close one round twice. A row an
//   operation changes stays locked until its transaction ends (PostgreSQL), or the whole store
//   does (SQLite: one writer).
// - One connection is used by one thread at a time (TaskRepository holds one mutex), except
//   sync(), which may run on another thread meanwhile.
// - Blobs (models, results, checkpoints) are std::string bytes; where a store keeps a model's
//   (a row, a file) is its own choice, and one it cannot read back whole is find_model's Error.
// - Errors: Conflict when a creation collides with an existing key, NotFound when an operation
//   names a row that does not exist, fedleaf::Error for storage failures.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/store/device_store.h"
#include "server/store/population_settings.h"
#include "server/store/store_kinds.h"
#include "server/store/task_claim.h"

namespace fedleaf::server {

enum class Durability { kNormal, kFull };

struct PopulationRecord {
  std::string id;
  std::string plan_json;
  std::string client_token_hash;  // hex SHA-256 of the population's client token
  PopulationSettings settings;
  RunState state = RunState::kRunning;
  int current_round = 0;
  double created_at = 0;
  // An operator's pause (claims hand out no task) and finish reason ("": it ran to its end).
  bool paused = false;
  std::string finish_reason;
  // Moves with each client token issued or revoked (servers sharing the store re-read them).
  std::int64_t tokens_epoch = 0;
  // A private population's noise secret: 32 CSPRNG bytes as 64 hex digits ("" when not private).
  // Whoever holds it can subtract the noise: never logged or served (design.md "Privacy").
  std::string privacy_secret;
};

// A population's client token, by its hash: id 0 made with the population, 1, 2, ... after.
struct ClientTokenRecord {
  std::string population_id;
  int id = 0;
  std::string token_hash;  // hex SHA-256 of the token
  double created_at = 0;
  double revoked_at = 0;  // 0 while live
};

struct RoundRecord {
  std::string population_id;
  int number = 0;
  RoundStatus status = RoundStatus::kOpen;
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

// A published model found, its bytes not necessarily read yet: read_bytes() may run on any
// thread, without the store and outside any transaction (a model kept in a file is read then,
// not under the caller's lock). Call it once; it throws fedleaf::Error when the bytes cannot be
// read.
struct ModelReader {
  std::string etag;
  std::function<std::string()> read_bytes;
};

struct TaskRecord {
  std::int64_t id = 0;  // assigned by claim_task
  std::string population_id;
  int round = 0;
  TaskKind kind = TaskKind::kTrain;
  TaskState state = TaskState::kLeased;
  std::int64_t lease_id = 0;  // current lease
  double lease_expires_at = 0;
  // Filled when the task is done: the lease that completed it and its receipt (what its answer
  // needs beyond this row; older rows hold the whole first answer).
  std::int64_t completed_lease_id = 0;
  std::string result_sha256;
  int result_status = 0;
  std::string result_body;
};

struct LeaseRecord {
  std::int64_t id = 0;  // assigned by claim_task
  std::int64_t task_id = 0;
  std::string token_hash;
  double expires_at = 0;
};

// find_task_with_leases: a task and its leases, ordered by id.
struct TaskWithLeases {
  TaskRecord task;
  std::vector<LeaseRecord> leases;
};

// find_progress: what a server sharing its store re-reads on every request.
struct PopulationProgress {
  RunState state = RunState::kRunning;
  int current_round = 0;
  bool paused = false;
  std::int64_t tokens_epoch = 0;
  std::optional<RoundRecord> round;  // the round asked for; nullopt when it does not exist
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

// A server optimizer's state (core::ServerOptimizer::save_state) after the close that published
// the model of `round`: what the close of that round starts from. Only the latest is kept. Like a
// model, its bytes may live in a file (SQLite: `<db>-models/<etag>.safetensors`, persisted before
// the commit that names it); a reader checks that they hash to the etag.
struct OptimizerStateRecord {
  std::string population_id;
  int round = 0;
  std::string etag;  // hex SHA-256 of bytes
  std::string bytes;
};

// What an accepted report adds to its round's counters (train: reports + 1 and the rest;
// evaluate: eval_reports + 1, eval_examples and each metric's Σ examples·value).
struct RoundDelta {
  double examples = 0;
  double loss_sum = 0;
  double accuracy_sum = 0;
  double accuracy_examples = 0;
  std::int64_t upload_bytes = 0;
  std::map<std::string, double> eval_sums;  // evaluate only
};

// add_rejection: a refused upload, the reason it is counted under, and the lease its token
// matched (0: none) with the sha256 of its bytes.
struct RefusedUpload {
  std::string population_id;
  std::string reason;
  std::int64_t lease_id = 0;
  std::string result_sha256 = {};
};

// accept_result: the upload of a result under one lease.
struct AcceptRequest {
  std::int64_t task_id = 0;
  std::int64_t lease_id = 0;  // the lease the upload's token matched
  std::string result_sha256;
  double now = 0;
  std::string train_bytes;  // train: the result, kept for the round's rebuild
  RoundDelta delta;
  // The receipt stored in the task row, given the round's train report count after this report
  // (what a repeat of the same bytes is answered from).
  std::function<std::string(int reports)> receipt_body;
  // The round a train result is folded into when not the task's own: a buffered population's
  // open version (its tasks were handed out on earlier ones). nullopt: the task's round.
  std::optional<int> fold_round;
};

enum class AcceptStatus {
  kAccepted,            // stored now
  kRepeated,            // the same bytes were accepted under this lease before
  kConflict,            // different bytes were accepted under this lease before
  kCompletedElsewhere,  // the task was completed under another lease
  kLeasedAgain,         // this lease expired and the task was leased again
  kLeaseExpired,        // the lease's expiry is at or before now
  kRoundClosed,         // train: the task's round is closed
};

struct AcceptOutcome {
  AcceptStatus status = AcceptStatus::kAccepted;
  TaskRecord task;    // the row after the operation (done when accepted or repeated)
  RoundRecord round;  // kAccepted: the task's round after the report, as this connection sees it
  // kAccepted train: the result's seq. A store one server owns numbers a round's results
  // 1, 2, ... (seq = round.reports); a shared store's seqs increase in the order of acceptance
  // but may skip values.
  std::int64_t seq = 0;
};

// close_round: what a round close writes, once lock_open_round() returned the round.
struct RoundCloseWrite {
  RoundRecord closed;                 // status closed, closed_at, robust_json are written
  PopulationRecord population;        // state and current_round are written
  std::optional<RoundRecord> opened;  // the next round, when one follows
  std::optional<ModelRecord> model;   // its model
  // The server optimizer's state after this close (round: the next round's number), written with
  // the model in the same transaction; the population's earlier states are dropped. Absent for
  // an optimizer that keeps none (FedAvg).
  std::optional<OptimizerStateRecord> optimizer_state;
  // false: close_round keeps the closed round's results, for the caller to drop later with
  // drop_results (deleting a round of megabyte results is the slowest part of the close step).
  bool drop_results = true;
};

class Store : public DeviceStore {
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

  // Makes a model's bytes durable ahead of the transaction that will name it (create_population,
  // close_round), so that the slow part of storing a large model can run before the caller takes
  // its lock. Thread-safe like sync(). A store that keeps models in its rows (in memory,
  // PostgreSQL) has nothing to do here; the SQLite file store writes and fsyncs the model's file
  // (its close_round and create_population do so too when this was not called).
  virtual void persist_model(const ModelRecord& model) { static_cast<void>(model); }
  // persist_model for an optimizer state, ahead of the close_round that names it.
  virtual void persist_optimizer_state(const OptimizerStateRecord& state) {
    static_cast<void>(state);
  }

  // Several servers may use this store at once: a server must re-read what it caches (the
  // population's round, its model) when the store moved on.
  virtual bool shared() const = 0;

  // ---- operations

  // Creates a population with its round 0 and model 0 (and no optimizer state: the initial one)
  // and its client token 0 (client_token_hash); Conflict if the id exists.
  virtual void create_population(const PopulationRecord& population, const RoundRecord& round0,
                                 const ModelRecord& model0) = 0;
  // Leases a task of the round in one operation: the task of that kind whose lease expired
  // first (at or before now; one another connection holds is skipped), else a new task when the
  // round has created fewer than `limit` of that kind (counted in train_tasks / eval_tasks).
  // Nothing for a round that is not open, a paused population, a client_token_hash that is not a
  // live token of the population (when set), or when every task is leased. A shared store may
  // create tasks a chunk at a time (PostgreSQL), never more than `limit`: a task created but
  // never leased is leased before any expired one.
  virtual std::optional<ClaimedTask> claim_task(const ClaimRequest& request) = 0;
  // Ends lease `lease_id` of task `task_id` at `now` when it is still the task's current lease
  // and the task is not done, so the task is leasable at once (a claim answer that never
  // reached its client gives its lease back); does nothing otherwise.
  virtual void release_lease(std::int64_t task_id, std::int64_t lease_id, double now) = 0;
  // Completes a task with a result, once per lease: the checks and the write are one operation
  // (see AcceptStatus; only kAccepted changes anything). A train report becomes a result of its
  // round (AcceptOutcome::seq). NotFound for an unknown task.
  virtual AcceptOutcome accept_result(const AcceptRequest& request) = 0;
  // The round when it is still open, locked until the transaction ends so that one connection
  // alone closes it, with every report accepted so far (it waits for the accepts other
  // connections have in flight); nullopt when it is closed (another server closed it first).
  // A shared store's caller must hold no other lock on the round: it commits what it holds
  // first (two closers each waiting for the other's accepts would deadlock).
  virtual std::optional<RoundRecord> lock_open_round(const std::string& population_id,
                                                     int number) = 0;
  // Writes a round close (after lock_open_round in the same transaction): the closed round with
  // its counters, the population, the next round and its model, and drops the closed round's
  // results (unless close.drop_results is false) and checkpoint. Conflict when the round is closed
  // already.
  virtual void close_round(const RoundCloseWrite& close) = 0;
  // Model retention: drops the models of the population's rounds below `before_round` that no
  // task still needs (no task of their round holds a lease valid after `now`: a leaf with such
  // a lease may still download its round's model); returns the rounds dropped, ascending. A
  // store that keeps a model's bytes outside its rows (SQLite's model files) deletes them only
  // once the transaction that dropped the row is durable, and never a file another row names:
  // a row without its bytes must never exist, bytes without a row are garbage it removes.
  virtual std::vector<int> drop_models(const std::string& population_id, int before_round,
                                       double now) = 0;
  // Pauses or resumes a running population (claim_task leases nothing while paused); false,
  // changing nothing, when it is finished or in that state already. NotFound: unknown id.
  virtual bool set_paused(const std::string& population_id, bool paused) = 0;
  // Records why an operator finished the population (after the close_round that finished it, in
  // the same transaction) and clears its pause. NotFound for an unknown population.
  virtual void set_finish_reason(const std::string& population_id, const std::string& reason) = 0;
  // Stores a new client token's hash under the next id (returned; issuers take turns: the
  // population's row is locked first) and moves tokens_epoch. NotFound: unknown population.
  virtual int issue_client_token(const std::string& population_id, const std::string& token_hash,
                                 double now) = 0;
  // Revokes a live token at `now` and moves the tokens_epoch: true. False, changing nothing, for
  // a token revoked already; NotFound for an unknown population or token.
  virtual bool revoke_client_token(const std::string& population_id, int token_id, double now) = 0;
  // Deletes the population's results of rounds up to `through_round` (closed rounds, whose close
  // kept them: RoundCloseWrite::drop_results).
  virtual void drop_results(const std::string& population_id, int through_round) = 0;
  // Inserts or replaces the round's checkpoint.
  virtual void put_checkpoint(const CheckpointRecord& checkpoint) = 0;
  // Counts a refused upload under its reason, unless the lease's last counted refusal had the
  // same bytes: a leaf whose answer was lost sends the same upload again, often to another
  // server, and that is one refusal. True when counted. An upload whose token matched no lease
  // (lease_id 0) is counted every time: nothing ties it to an earlier one.
  virtual bool add_rejection(const RefusedUpload& upload) = 0;

  // ---- reads

  virtual std::optional<PopulationRecord> find_population(const std::string& id) = 0;
  virtual std::vector<PopulationRecord> list_populations() = 0;  // ordered by id
  virtual std::optional<RoundRecord> find_round(const std::string& population_id, int number) = 0;
  virtual std::vector<RoundRecord> list_rounds(const std::string& population_id) = 0;
  virtual std::optional<ModelRecord> find_model(const std::string& population_id, int round) = 0;
  // find_model with the bytes read later (ModelReader). This default reads them now.
  virtual std::optional<ModelReader> find_model_reader(const std::string& population_id,
                                                       int round) {
    std::optional<ModelRecord> model = find_model(population_id, round);
    if (!model) return std::nullopt;
    return ModelReader{model->etag,
                       [bytes = std::move(model->bytes)]() mutable { return std::move(bytes); }};
  }
  virtual std::optional<TaskRecord> find_task(std::int64_t id) = 0;
  virtual std::vector<LeaseRecord> list_leases(std::int64_t task_id) = 0;  // ordered by id
  // find_task and list_leases together (an upload reads both); nullopt for an unknown task. This
  // default calls the two; PostgreSQL reads them in one statement (a round trip each counts).
  virtual std::optional<TaskWithLeases> find_task_with_leases(std::int64_t id);
  // The population's run state and current round, and its round `number` (as find_round):
  // what PopulationCache re-reads on every request to a shared store. nullopt when the
  // population does not exist. This default calls find_population and find_round; PostgreSQL
  // reads them in one statement.
  virtual std::optional<PopulationProgress> find_progress(const std::string& population_id,
                                                          int number);
  // Whether a leased task of the round has a lease that expired at or before `now` (a task
  // created but never leased has none).
  virtual bool has_expired_lease(const std::string& population_id, int round, double now) = 0;
  // Whether claim_task would lease a task of the round without creating one: a task created but
  // never leased, or one whose lease expired at or before `now`.
  virtual bool has_leasable_task(const std::string& population_id, int round, double now) = 0;
  // Earliest lease expiry after `now` among the round's leased tasks.
  virtual std::optional<double> next_lease_expiry(const std::string& population_id, int round,
                                                  double now) = 0;
  // Leased tasks whose lease is still valid at `now`, over every population.
  virtual std::int64_t count_active_leases(double now) = 0;
  // The population's tasks of `kind` out at `now` (leased, the lease still valid), of every
  // round: what a buffered population's concurrency bounds.
  virtual std::int64_t count_out_tasks(const std::string& population_id, TaskKind kind,
                                       double now) = 0;
  // The population's tasks whose current lease was claimed under `client_key` and is valid at
  // `now` (of every round and kind): what ClaimRequest::max_client_tasks bounds. A key claims
  // nothing under "" (leases stored before keys were).
  virtual ClientTasks count_client_tasks(const std::string& population_id,
                                         const std::string& client_key, double now) = 0;
  // Results of the round with seq > after_seq, in seq order.
  virtual std::vector<ResultRecord> list_results(const std::string& population_id, int round,
                                                 std::int64_t after_seq) = 0;
  // The round's stored results counted by the round of their task (task round → results), without
  // their bytes: a buffered version's close reads its reports' staleness from it.
  virtual std::map<int, std::int64_t> count_results_by_task_round(const std::string& population_id,
                                                                  int round) = 0;
  virtual std::optional<CheckpointRecord> find_checkpoint(const std::string& population_id,
                                                          int round) = 0;
  // The optimizer state stored with round `round` (written by the close that published its
  // model); nullopt when none is.
  virtual std::optional<OptimizerStateRecord> find_optimizer_state(const std::string& population_id,
                                                                   int round) = 0;
  // The population's client tokens, live and revoked, ordered by id.
  virtual std::vector<ClientTokenRecord> list_client_tokens(const std::string& population_id) = 0;
  // Rejected uploads per reason.
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
