// SqliteStore: the Store on one SQLite database (a file, or ":memory:" for tests), for one
// server process: its operations are atomic because SQLite has one writer at a time.
//
//   SqliteStore store("/var/lib/fedleaf/tasks.db");   // creates the schema on first open
//
// The database runs in WAL mode with foreign keys on and a busy timeout; commits are fsynced
// (synchronous=FULL) for Durability::kFull and synchronous=NORMAL otherwise. A NORMAL commit has
// written its frames to the write-ahead log (the OS holds them: they survive a killed process);
// sync() fdatasyncs the log through a descriptor of its own, so every frame written before it
// survives power loss — what FULL does at each commit, once for many commits. The log's
// checksummed frame chain makes recovery keep a prefix of the commits. The schema carries a
// version number (table schema_version); opening a database of another version throws
// fedleaf::Error. One connection, used by one thread at a time (see Store); sync() from any
// thread. An in-memory database (":memory:") has nothing to sync.
//
// Models: a file database keeps each model's bytes in `<db>-models/<etag>.safetensors`
// (ModelFiles), written and fsynced before the transaction naming it commits (persist_model(),
// or close_round/create_population themselves); the `models` row holds the ETag with storage
// 'file'. Opening the store moves the model files no row names into `<db>-models/lost+found/`
// (a close that crashed before its commit — or a database that lost rows, or is not the one the
// files belong to: nothing that may be a model's only copy is deleted) and reports them
// (model_files_at_open()). An in-memory database keeps models as blobs, and so do rows written
// before schema 3.
//
// Opening refuses a damaged database (PRAGMA quick_check), and every error at open names the
// database file.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/store/model_files.h"
#include "server/store/store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace fedleaf::server {

class SqliteStatement;  // sqlite_statement.h

class SqliteStore : public Store {
 public:
  static constexpr int kSchemaVersion = 10;

  explicit SqliteStore(const std::string& path);
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  void begin(Durability durability) override;
  void commit() override;
  void rollback() override;
  void begin_nested() override;
  void commit_nested() override;
  void rollback_nested() override;
  void sync() override;
  void persist_model(const ModelRecord& model) override;
  void persist_optimizer_state(const OptimizerStateRecord& state) override;

  bool shared() const override { return false; }

  // What opening found in `<db>-models/`: the model files no row names, moved to its
  // lost+found/ (for the server's log), and how many distinct models the rows name.
  struct ModelFilesAtOpen {
    std::vector<std::string> set_aside;
    std::size_t named = 0;
  };
  const ModelFilesAtOpen& model_files_at_open() const { return models_at_open_; }

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
  // A model kept in a file is read by read_bytes(), not here (ModelFiles reads are thread-safe).
  std::optional<ModelReader> find_model_reader(const std::string& population_id,
                                               int round) override;
  std::optional<TaskRecord> find_task(std::int64_t id) override;
  std::vector<LeaseRecord> list_leases(std::int64_t task_id) override;
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

 private:
  using Statement = SqliteStatement;
  // The prepared statement for `sql`, reset and ready for binding (cached per connection).
  Statement statement(const char* sql);
  void exec(const char* sql);
  void create_schema();
  void set_durability(Durability durability);
  void open_wal_for_sync();
  void insert_round(const RoundRecord& round);
  // sqlite_store_admin.cc: NotFound unless the population exists; a token row; the epoch moved.
  void require_population(const std::string& population_id);
  void insert_client_token(const ClientTokenRecord& token);
  void bump_tokens_epoch(const std::string& population_id);
  void update_round(const RoundRecord& round);
  void update_task(const TaskRecord& task);
  void insert_model(const ModelRecord& model);
  // close_round's optimizer state: the row (its file first), the population's earlier rows
  // dropped, their files with them as drop_models drops a model's.
  void replace_optimizer_state(const OptimizerStateRecord& state);
  // Whether a row (a model, or an optimizer state) names the file `etag`.
  bool file_named(const std::string& etag);
  void check_integrity();
  void set_aside_unreferenced_model_files();
  // Model files whose rows drop_models deleted move with the transaction: from the open step to
  // the transaction, to "committed" at commit, and are deleted once durable (a kFull commit, or
  // the next sync() after it); a rollback forgets them, and persist_model() takes a name back
  // (a row names it again). Under files_mutex_: sync() and persist_model() run on other threads.
  void forget_dropped_file(const std::string& etag);
  void remove_dropped_files(const std::set<std::string>& durable);

  sqlite3* db_ = nullptr;
  std::map<const char*, sqlite3_stmt*> cache_;
  std::optional<Durability> durability_;
  int wal_fd_ = -1;  // read-only descriptor of the write-ahead log, for sync(); -1 in memory
  std::optional<ModelFiles> model_files_;  // a file database's model directory
  ModelFilesAtOpen models_at_open_;
  std::mutex files_mutex_;
  bool in_step_ = false;
  std::set<std::string> step_dropped_files_, transaction_dropped_files_, committed_dropped_files_;
};

}  // namespace fedleaf::server
