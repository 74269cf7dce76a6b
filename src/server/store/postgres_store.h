// PostgresStore: the Store on a PostgreSQL database (libpq), shared by any number of server
// instances — what `fedleaf-server --db postgresql://...` uses.
//
//   PostgresStore store("postgresql://fedleaf@127.0.0.1:55432/fedleaf");  // schema on first open
//
// Atomicity is PostgreSQL's, with no row every server's claims and uploads lock until their
// batch commits (docs/deploy.md "Locks"): claim_task picks a never-leased or expired task with
// FOR UPDATE SKIP LOCKED (two servers never wait for, nor take, the same task), and when none is
// left creates a chunk of tasks under the round row's lock in a side transaction committed at
// once; accept_result locks the task row, then this store's round_shards row (its report
// counters for the round: a round's counters are its row plus its shards), takes the result's
// seq from a sequence, and a result is unique per task and per (round, seq); lock_open_round
// locks every shard row of the round and then the round row, so one server closes it, with
// every report. Other row locks last until the transaction (the repository's batch) commits.
//
// Durability: a kFull commit waits for the WAL flush (synchronous_commit on); a kNormal commit
// does not (it survives a killed server process — PostgreSQL holds it — and a PostgreSQL crash
// once a later sync() returned). sync() commits a transaction that takes an xid with
// synchronous_commit on over another connection: its WAL flush covers every earlier commit.
//
// Round trips: transaction control (BEGIN, SAVEPOINT, RELEASE) is queued and sent in one libpq
// pipeline with the next statement; statements are prepared once per connection; a sync is one
// statement. src/server/README.md "PostgreSQL statements" counts them per claim and upload.
// Thread-safety as Store: one thread at a time, sync() from any thread.
//
// Schema version and migrations as SqliteStore's (postgres_schema.h); a start whose version is
// current runs no DDL and locks no table, creation and migrations run under an advisory lock
// and retry a lost lock race (postgres_schema_setup.h). Errors: Conflict for a unique violation,
// fedleaf::Error for everything else (a lock not granted is its subclass PgLockFailure; a lost
// connection included: the caller answers 503).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/store/postgres_schema_setup.h"
#include "server/store/store.h"

struct pg_conn;
struct pg_result;

namespace fedleaf::server {

class PgParams;  // postgres_statement.h
class PgRows;

class PostgresStore : public Store {
 public:
  static constexpr int kSchemaVersion = 11;
  // Tasks a claim creates at once when the round has none to lease (at most the limit).
  static constexpr int kTaskChunk = 64;
  // The side connection's lock wait limit (see side_transaction).
  static constexpr const char* kSideLockTimeout = "SET lock_timeout = '1s'";

  // `setup`: how a start that creates or migrates the schema retries (postgres_schema_setup.h).
  explicit PostgresStore(const std::string& url, const PostgresSchemaSetup& setup = {});
  ~PostgresStore() override;
  PostgresStore(const PostgresStore&) = delete;
  PostgresStore& operator=(const PostgresStore&) = delete;

  void begin(Durability durability) override;
  void commit() override;
  void rollback() override;
  void begin_nested() override;
  void commit_nested() override;
  void rollback_nested() override;
  void sync() override;
  bool shared() const override { return true; }

  void create_population(const PopulationRecord& population, const RoundRecord& round0,
                         const ModelRecord& model0) override;
  std::optional<ClaimedTask> claim_task(const ClaimRequest& request) override;
  void release_lease(std::int64_t task_id, std::int64_t lease_id, double now) override;
  AcceptOutcome accept_result(const AcceptRequest& request) override;
  std::optional<RoundRecord> lock_open_round(const std::string& population_id, int number) override;
  void close_round(const RoundCloseWrite& close) override;
  bool set_paused(const std::string& population_id, bool paused) override;
  void set_finish_reason(const std::string& population_id, const std::string& reason) override;
  int issue_client_token(const std::string& population_id, const std::string& token_hash,
                         double now) override;
  bool revoke_client_token(const std::string& population_id, int token_id, double now) override;
  std::vector<ClientTokenRecord> list_client_tokens(const std::string& population_id) override;
  EnrollOutcome enroll_device(const DeviceRecord& device, int max_per_hour) override;
  std::optional<DeviceRecord> find_device(const std::string& population_id,
                                          const std::string& credential_hash, bool lock) override;
  void record_participation(const std::string& population_id, const std::string& device_id,
                            int round) override;
  bool revoke_device(const std::string& population_id, const std::string& device_id,
                     double now) override;
  std::vector<DeviceRecord> list_devices(const std::string& population_id,
                                         const std::string& after_id, int limit) override;
  void drop_results(const std::string& population_id, int through_round) override;
  std::vector<int> drop_models(const std::string& population_id, int before_round,
                               double now) override;
  void put_checkpoint(const CheckpointRecord& checkpoint) override;
  bool add_rejection(const RefusedUpload& upload) override;

  std::optional<PopulationRecord> find_population(const std::string& id) override;
  std::vector<PopulationRecord> list_populations() override;
  std::optional<RoundRecord> find_round(const std::string& population_id, int number) override;
  std::vector<RoundRecord> list_rounds(const std::string& population_id) override;
  std::optional<ModelRecord> find_model(const std::string& population_id, int round) override;
  std::optional<TaskRecord> find_task(std::int64_t id) override;
  std::vector<LeaseRecord> list_leases(std::int64_t task_id) override;
  std::optional<TaskWithLeases> find_task_with_leases(std::int64_t id) override;
  std::optional<PopulationProgress> find_progress(const std::string& population_id,
                                                  int number) override;
  bool has_expired_lease(const std::string& population_id, int round, double now) override;
  bool has_leasable_task(const std::string& population_id, int round, double now) override;
  std::optional<double> next_lease_expiry(const std::string& population_id, int round,
                                          double now) override;
  std::int64_t count_active_leases(double now) override;
  std::int64_t count_out_tasks(const std::string& population_id, TaskKind kind,
                               double now) override;
  ClientTasks count_client_tasks(const std::string& population_id, const std::string& client_key,
                                 double now) override;
  std::vector<ResultRecord> list_results(const std::string& population_id, int round,
                                         std::int64_t after_seq) override;
  std::map<int, std::int64_t> count_results_by_task_round(const std::string& population_id,
                                                          int round) override;
  std::optional<CheckpointRecord> find_checkpoint(const std::string& population_id,
                                                  int round) override;
  std::map<std::string, std::int64_t> rejections(const std::string& population_id) override;
  std::optional<OptimizerStateRecord> find_optimizer_state(const std::string& population_id,
                                                           int round) override;

  using Params = PgParams;
  using Rows = PgRows;

 private:
  // A connection and its statements, each prepared once.
  struct Connection {
    pg_conn* conn = nullptr;
    std::map<const char*, std::string> prepared;  // sql -> statement name
  };
  // postgres_store_admin.cc: NotFound unless the population exists; a token row; the epoch
  // moved (and the population's row locked until the transaction ends).
  void require_population(const std::string& population_id);
  void insert_client_token(const ClientTokenRecord& token);
  void bump_tokens_epoch(const std::string& population_id);
  // Runs a statement on the main connection (the caller's transaction) with its parameters,
  // after the transaction control queued in pending_ (one round trip for all).
  Rows run(const char* sql, const Params& params);
  // The statement's name on the connection, prepared on first use.
  static const std::string& prepared_name(Connection& connection, const char* sql);
  static Rows run_on(Connection& connection, const char* sql, const Params& params);
  // Runs `body` in a transaction of its own on the side connection, committed before it returns
  // (whatever the caller's transaction does later): what must not keep the round row locked
  // until the caller's batch commits. Its lock waits time out (kSideLockTimeout): a server
  // waiting here holds its own batch open, which a closer may be waiting for.
  template <class Body>
  void side_transaction(Body&& body);
  void exec(const char* sql);
  void insert_round(const RoundRecord& round);
  std::optional<RoundRecord> round_row(const char* sql, const std::string& population_id,
                                       int number);
  // Leases a task without creating one (never leased, or its lease expired), in one statement.
  std::optional<ClaimedTask> lease_task(const ClaimRequest& request);
  // Side transactions: creates a chunk of tasks when the round has created fewer than the
  // limit; creates this connection's (empty) shard row of a round. Both under the round row's
  // lock, and only while the round is open (train) or exists (evaluate). False when not.
  bool create_task_chunk(const ClaimRequest& request);
  bool create_shard(const std::string& population_id, int number, bool open_only);
  // Whether a task of the round is leased with an expiry at or before `now` (never leased
  // tasks have expiry 0); only those leased before when `leased_before`.
  bool leasable_rows(const std::string& population_id, int round, double now, bool leased_before);
  // Counts an accepted report in this store's shard row of its round and returns the round
  // with it (every shard summed); nullopt for a train report when the round is closed.
  // count_train_report is the one-statement path of a train report whose shard row exists and
  // whose round is open; nullopt otherwise (count_report then tells the cases apart).
  std::optional<RoundRecord> count_report(const std::string& population_id, int number,
                                          TaskKind kind, const RoundDelta& delta);
  std::optional<RoundRecord> count_train_report(const std::string& population_id, int number,
                                                const RoundDelta& delta);
  // The task locked and its train report counted as count_train_report does, in one statement,
  // when the task is still leased under the request's lease (classify_upload's kAccepted); its
  // row in `task`. nullopt otherwise, or when count_train_report would be.
  std::optional<RoundRecord> lock_and_count_train_report(const AcceptRequest& request,
                                                         TaskRecord& task);
  // The counters of the shard row `sql` selects (and locks) with `key`.
  std::optional<RoundRecord> shard_of(const char* sql, const Params& key);

  // Transaction control not sent yet (begin, begin_nested, commit_nested): sent ahead of the
  // next statement on the main connection, or dropped when nothing runs before commit/rollback.
  static constexpr const char* kBegin = "BEGIN";
  static constexpr const char* kSavepoint = "SAVEPOINT step";
  static constexpr const char* kRelease = "RELEASE SAVEPOINT step";
  std::vector<const char*> pending_;

  Connection main_;
  Connection side_;
  std::int64_t shard_ = 0;  // this store's round_shards rows: its main connection's backend pid
  std::mutex sync_mutex_;
  pg_conn* sync_conn_ = nullptr;  // guarded by sync_mutex_
};

}  // namespace fedleaf::server
