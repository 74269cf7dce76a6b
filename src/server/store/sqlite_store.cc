#include "server/store/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include "core/error.h"
#include "server/store/sqlite_rows.h"
#include "server/store/sqlite_schema.h"
#include "server/store/sqlite_statement.h"
#include "server/store/store_rules.h"

namespace fedleaf::server {

SqliteStore::SqliteStore(const std::string& path) {
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw Error("sqlite store: cannot open '" + path + "': " + message);
  }
  const auto close_all = [this] {
    if (wal_fd_ >= 0) ::close(wal_fd_);
    for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
    sqlite3_close(db_);
  };
  try {
    sqlite3_busy_timeout(db_, 5000);
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA foreign_keys=ON");
    check_integrity();
    set_durability(Durability::kFull);
    create_schema();
    open_wal_for_sync();
    set_aside_unreferenced_model_files();
  } catch (const Error& e) {
    close_all();
    // Errors at open come from SQLite or the file system, and neither names the database.
    std::string message = e.what();
    const std::string ours = "sqlite store: ";
    if (message.rfind(ours, 0) == 0) message.erase(0, ours.size());
    throw Error("sqlite store '" + path + "': " + message);
  } catch (...) {
    close_all();
    throw;
  }
}

// A damaged page is otherwise found by the first write that touches it, and then every commit
// fails until a restart that fails the same way; refusing to start names the problem instead.
// quick_check reads every page once (O(database size): models live in files beside it).
void SqliteStore::check_integrity() {
  std::vector<std::string> problems;
  try {
    auto s = statement("PRAGMA quick_check(5)");
    while (s.step()) problems.push_back(s.text(0));
  } catch (const Error&) {
    // A page too damaged to walk stops the check itself.
    problems = {sqlite3_errmsg(db_)};
  }
  if (problems.size() == 1 && problems[0] == "ok") return;
  std::string listed;
  for (const std::string& problem : problems) listed += (listed.empty() ? "" : "; ") + problem;
  throw Error("the database is damaged (PRAGMA quick_check: " + listed +
              "); restore it from a backup, or move it away to start with an empty one");
}

SqliteStore::~SqliteStore() {
  if (wal_fd_ >= 0) ::close(wal_fd_);
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

void SqliteStore::open_wal_for_sync() {
  const char* db_file = sqlite3_db_filename(db_, "main");
  if (db_file == nullptr || *db_file == '\0') return;  // in memory: nothing to sync
  // The log exists from the first transaction in WAL mode (create_schema ran one) until this
  // connection, the last one, closes; checkpoints rewrite or truncate it in place, so the
  // descriptor keeps naming the live log.
  const char* wal = sqlite3_filename_wal(db_file);
  model_files_.emplace(std::string(db_file) + "-models");
  wal_fd_ = ::open(wal, O_RDONLY | O_CLOEXEC);
  if (wal_fd_ < 0) {
    throw Error(std::string("sqlite store: cannot open the write-ahead log '") + wal +
                "' for sync: " + std::strerror(errno));
  }
  // SQLite does not sync directories in WAL mode: make the database's and the log's directory
  // entries durable once, so that a synced log is also found after power loss.
  const std::string dir = std::filesystem::path(db_file).parent_path().string();
  const int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0 || ::fsync(dir_fd) != 0) {
    const std::string reason = std::strerror(errno);
    if (dir_fd >= 0) ::close(dir_fd);
    throw Error("sqlite store: cannot sync the directory '" + dir + "': " + reason);
  }
  ::close(dir_fd);
}

void SqliteStore::sync() {
  if (wal_fd_ < 0) return;
  std::set<std::string> committed;
  {
    std::lock_guard lock(files_mutex_);
    committed = committed_dropped_files_;
  }
  if (::fdatasync(wal_fd_) != 0) {
    throw Error(std::string("sqlite store: fdatasync of the write-ahead log failed: ") +
                std::strerror(errno));
  }
  remove_dropped_files(committed);
}

void SqliteStore::remove_dropped_files(const std::set<std::string>& durable) {
  std::lock_guard lock(files_mutex_);
  for (const std::string& etag : durable) {
    // Taken back by persist_model() meanwhile: a row names it again.
    if (committed_dropped_files_.erase(etag) == 0) continue;
    try {
      model_files_->remove(etag);
    } catch (const Error&) {  // left behind: a file no row names, removed at the next open
    }
  }
}

void SqliteStore::forget_dropped_file(const std::string& etag) {
  std::lock_guard lock(files_mutex_);
  step_dropped_files_.erase(etag);
  transaction_dropped_files_.erase(etag);
  committed_dropped_files_.erase(etag);
}

SqliteStore::Statement SqliteStore::statement(const char* sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
      sqlite_fail(db_, std::string("prepare ") + sql);
    }
    it = cache_.emplace(sql, stmt).first;
  }
  return Statement(db_, it->second);
}

void SqliteStore::exec(const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : "unknown error";
    sqlite3_free(message);
    throw Error(std::string("sqlite store: ") + sql + ": " + text);
  }
}

void SqliteStore::create_schema() {
  exec("BEGIN IMMEDIATE");
  try {
    for (const char* sql : kSqliteSchema) exec(sql);
    int found = 0;
    bool has_version = false;
    {
      auto version = statement("SELECT version FROM schema_version");
      has_version = version.step();
      if (has_version) found = version.int32(0);
    }
    if (has_version) {
      if (found < 1 || found > kSchemaVersion) {
        throw Error("sqlite store: schema version " + std::to_string(found) +
                    " is not one this server reads (1 to " + std::to_string(kSchemaVersion) + ")");
      }
      for (; found < kSchemaVersion; ++found) exec(kSqliteMigrations[found - 1]);
      statement("UPDATE schema_version SET version = ?").bind(1, kSchemaVersion).run();
    } else {
      statement("INSERT INTO schema_version (version) VALUES (?)").bind(1, kSchemaVersion).run();
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void SqliteStore::set_durability(Durability durability) {
  if (durability_ == durability) return;
  exec(durability == Durability::kFull ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
  durability_ = durability;
}

void SqliteStore::begin(Durability durability) {
  set_durability(durability);
  statement("BEGIN IMMEDIATE").run();
}
void SqliteStore::commit() {
  statement("COMMIT").run();
  std::set<std::string> committed;
  {
    std::lock_guard lock(files_mutex_);
    committed_dropped_files_.insert(transaction_dropped_files_.begin(),
                                    transaction_dropped_files_.end());
    committed.swap(transaction_dropped_files_);
  }
  if (durability_ == Durability::kFull) remove_dropped_files(committed);
}
void SqliteStore::rollback() {
  {
    std::lock_guard lock(files_mutex_);
    step_dropped_files_.clear();
    transaction_dropped_files_.clear();
  }
  in_step_ = false;
  statement("ROLLBACK").run();
}
void SqliteStore::begin_nested() {
  statement("SAVEPOINT step").run();
  in_step_ = true;
}
void SqliteStore::commit_nested() {
  statement("RELEASE step").run();
  in_step_ = false;
  std::lock_guard lock(files_mutex_);
  transaction_dropped_files_.insert(step_dropped_files_.begin(), step_dropped_files_.end());
  step_dropped_files_.clear();
}
void SqliteStore::rollback_nested() {
  statement("ROLLBACK TO step").run();
  statement("RELEASE step").run();
  in_step_ = false;
  std::lock_guard lock(files_mutex_);
  step_dropped_files_.clear();
}

// ---- populations

void SqliteStore::create_population(const PopulationRecord& p, const RoundRecord& round0,
                                    const ModelRecord& model0) {
  static const std::string sql = std::string("INSERT INTO populations (") + kPopulationColumns +
                                 ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  statement(sql.c_str())
      .bind(1, p.id)
      .bind(2, p.plan_json)
      .bind(3, p.client_token_hash)
      .bind(4, p.settings.rounds)
      .bind(5, p.settings.clients_per_round)
      .bind(6, p.settings.min_reports)
      .bind(7, p.settings.round_deadline_s)
      .bind(8, p.settings.lease_s)
      .bind(9, p.settings.train_tasks_per_round)
      .bind(10, p.settings.eval_tasks_per_round)
      .bind(11, to_string(p.state))
      .bind(12, p.current_round)
      .bind(13, p.created_at)
      .run();
  insert_round(round0);
  insert_model(model0);
}

std::optional<PopulationRecord> SqliteStore::find_population(const std::string& id) {
  static const std::string sql =
      std::string("SELECT ") + kPopulationColumns + " FROM populations WHERE id = ?";
  auto s = statement(sql.c_str());
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_population(s);
}

std::vector<PopulationRecord> SqliteStore::list_populations() {
  static const std::string sql =
      std::string("SELECT ") + kPopulationColumns + " FROM populations ORDER BY id";
  auto s = statement(sql.c_str());
  std::vector<PopulationRecord> out;
  while (s.step()) out.push_back(read_population(s));
  return out;
}

// ---- rounds

void SqliteStore::insert_round(const RoundRecord& r) {
  static const std::string sql = std::string("INSERT INTO rounds (") + kRoundColumns +
                                 ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  auto s = statement(sql.c_str());
  s.bind(1, r.population_id).bind(2, r.number);
  bind_round_fields(s, r, 3);
  s.run();
}

std::optional<RoundRecord> SqliteStore::find_round(const std::string& population_id, int number) {
  static const std::string sql = std::string("SELECT ") + kRoundColumns +
                                 " FROM rounds WHERE population_id = ? AND number = ?";
  auto s = statement(sql.c_str());
  s.bind(1, population_id).bind(2, number);
  if (!s.step()) return std::nullopt;
  return read_round(s);
}

std::vector<RoundRecord> SqliteStore::list_rounds(const std::string& population_id) {
  static const std::string sql = std::string("SELECT ") + kRoundColumns +
                                 " FROM rounds WHERE population_id = ? ORDER BY number";
  auto s = statement(sql.c_str());
  s.bind(1, population_id);
  std::vector<RoundRecord> out;
  while (s.step()) out.push_back(read_round(s));
  return out;
}

void SqliteStore::update_round(const RoundRecord& r) {
  auto s = statement(
      "UPDATE rounds SET status = ?, started_at = ?, deadline = ?, closed_at = ?, "
      "train_tasks = ?, eval_tasks = ?, reports = ?, examples = ?, loss_sum = ?, "
      "accuracy_sum = ?, accuracy_examples = ?, upload_bytes = ?, eval_reports = ?, "
      "eval_examples = ?, eval_sums_json = ?, robust_json = ? WHERE population_id = ? AND "
      "number = ?");
  bind_round_fields(s, r, 1);
  s.bind(17, r.population_id).bind(18, r.number);
  s.run();
  if (sqlite3_changes(db_) == 0) {
    throw NotFound("round " + std::to_string(r.number) + " of population '" + r.population_id +
                   "' does not exist");
  }
}

// SQLite has one writer: the transaction (BEGIN IMMEDIATE) holds the whole database already.
std::optional<RoundRecord> SqliteStore::lock_open_round(const std::string& population_id,
                                                        int number) {
  return open_round_or_nothing(find_round(population_id, number), population_id, number);
}

void SqliteStore::close_round(const RoundCloseWrite& close) {
  const RoundRecord& closed = close.closed;
  statement(
      "UPDATE rounds SET status = 'closed', closed_at = ?, robust_json = ? "
      "WHERE population_id = ? AND number = ? AND status = 'open'")
      .bind(1, closed.closed_at)
      .bind(2, closed.robust_json)
      .bind(3, closed.population_id)
      .bind(4, closed.number)
      .run();
  if (sqlite3_changes(db_) == 0) {
    throw Conflict("round " + std::to_string(closed.number) + " of population '" +
                   closed.population_id + "' is not open");
  }
  if (close.drop_results) drop_results(closed.population_id, closed.number);
  statement("DELETE FROM checkpoints WHERE population_id = ? AND round = ?")
      .bind(1, closed.population_id)
      .bind(2, closed.number)
      .run();
  if (close.opened) insert_round(*close.opened);
  if (close.model) {
    insert_model(*close.model);
  }
  statement("UPDATE populations SET state = ?, current_round = ? WHERE id = ?")
      .bind(1, to_string(close.population.state))
      .bind(2, close.population.current_round)
      .bind(3, close.population.id)
      .run();
  if (sqlite3_changes(db_) == 0) {
    throw NotFound("population '" + close.population.id + "' does not exist");
  }
}

void SqliteStore::drop_results(const std::string& population_id, int through_round) {
  statement("DELETE FROM results WHERE population_id = ? AND round <= ?")
      .bind(1, population_id)
      .bind(2, through_round)
      .run();
}

// ---- models

void SqliteStore::persist_model(const ModelRecord& model) {
  if (!model_files_) return;
  forget_dropped_file(model.etag);
  model_files_->persist(model.etag, model.bytes);
}

std::vector<int> SqliteStore::drop_models(const std::string& population_id, int before_round,
                                          double now) {
  std::vector<int> rounds;
  std::set<std::string> files;
  {
    auto s = statement(
        "DELETE FROM models AS m WHERE population_id = ? AND round < ? AND NOT EXISTS (SELECT 1 "
        "FROM tasks AS t WHERE t.population_id = m.population_id AND t.round = m.round AND "
        "t.state = 'leased' AND t.lease_expires_at > ?) RETURNING round, etag, storage");
    s.bind(1, population_id).bind(2, before_round).bind(3, now);
    while (s.step()) {
      rounds.push_back(s.int32(0));
      if (s.text(2) == "file") files.insert(s.text(1));
    }
  }
  std::sort(rounds.begin(), rounds.end());
  if (!model_files_) return rounds;
  std::lock_guard lock(files_mutex_);
  for (const std::string& etag : files) {
    // Content-addressed: another row (another population's equal model) may name the same file.
    auto named = statement("SELECT 1 FROM models WHERE etag = ? AND storage = 'file' LIMIT 1");
    named.bind(1, etag);
    if (!named.step()) (in_step_ ? step_dropped_files_ : transaction_dropped_files_).insert(etag);
  }
  return rounds;
}

// The file first: the row that names it commits after the file and its directory entry are
// durable (a file already there was, by its content-addressed name).
void SqliteStore::insert_model(const ModelRecord& model) {
  persist_model(model);
  statement(
      "INSERT INTO models (population_id, round, etag, bytes, storage) VALUES (?, ?, ?, ?, ?)")
      .bind(1, model.population_id)
      .bind(2, model.round)
      .bind(3, model.etag)
      .bind_blob(4, model_files_ ? std::string() : model.bytes)
      .bind(5, model_files_ ? "file" : "blob")
      .run();
}

std::optional<ModelRecord> SqliteStore::find_model(const std::string& population_id, int round) {
  std::optional<ModelReader> reader = find_model_reader(population_id, round);
  if (!reader) return std::nullopt;
  return ModelRecord{population_id, round, reader->etag, reader->read_bytes()};
}

std::optional<ModelReader> SqliteStore::find_model_reader(const std::string& population_id,
                                                          int round) {
  auto s =
      statement("SELECT etag, storage, bytes FROM models WHERE population_id = ? AND round = ?");
  s.bind(1, population_id).bind(2, round);
  if (!s.step()) return std::nullopt;
  std::string etag = s.text(0);
  if (s.text(1) != "file") {
    return ModelReader{std::move(etag), [bytes = s.blob(2)]() mutable { return std::move(bytes); }};
  }
  if (!model_files_) {
    throw Error("sqlite store: the model of round " + std::to_string(round) + " of population '" +
                population_id + "' is stored in a file, but this database has no model directory");
  }
  return ModelReader{etag, [files = *model_files_, etag] { return files.read(etag); }};
}

// Only at open: no close of this process is between its file and its commit.
void SqliteStore::set_aside_unreferenced_model_files() {
  if (!model_files_) return;
  std::set<std::string> names;
  auto s = statement("SELECT DISTINCT etag FROM models WHERE storage = 'file'");
  while (s.step()) names.insert(s.text(0));
  models_at_open_.named = names.size();
  models_at_open_.set_aside = model_files_->set_aside_unreferenced(names);
}

// ---- tasks and leases

std::optional<ClaimedTask> SqliteStore::claim_task(const ClaimRequest& r) {
  const char* kind = to_string(r.kind);
  std::int64_t task_id = 0;
  {
    auto s = statement(
        "SELECT id FROM tasks WHERE population_id = ? AND round = ? AND kind = ? "
        "AND state = 'leased' AND lease_expires_at <= ? ORDER BY lease_expires_at, id LIMIT 1");
    s.bind(1, r.population_id).bind(2, r.round).bind(3, kind).bind(4, r.now);
    if (s.step()) task_id = s.int64(0);
  }
  if (task_id == 0) {
    const char* count_sql =
        r.kind == TaskKind::kTrain
            ? "UPDATE rounds SET train_tasks = train_tasks + 1 WHERE population_id = ? AND "
              "number = ? AND status = 'open' AND train_tasks < ?"
            : "UPDATE rounds SET eval_tasks = eval_tasks + 1 WHERE population_id = ? AND "
              "number = ? AND status = 'open' AND eval_tasks < ?";
    statement(count_sql).bind(1, r.population_id).bind(2, r.round).bind(3, r.limit).run();
    if (sqlite3_changes(db_) == 0) return std::nullopt;
    statement(
        "INSERT INTO tasks (population_id, round, kind, state, lease_id, lease_expires_at, "
        "completed_lease_id, result_sha256, result_status, result_body) "
        "VALUES (?, ?, ?, 'leased', 0, 0, 0, '', 0, '')")
        .bind(1, r.population_id)
        .bind(2, r.round)
        .bind(3, kind)
        .run();
    task_id = sqlite3_last_insert_rowid(db_);
  } else if (!lock_open_round(r.population_id, r.round)) {
    return std::nullopt;
  }
  statement("INSERT INTO leases (task_id, token_hash, expires_at) VALUES (?, ?, ?)")
      .bind(1, task_id)
      .bind(2, r.lease_token_hash)
      .bind(3, r.lease_expires_at)
      .run();
  const std::int64_t lease_id = sqlite3_last_insert_rowid(db_);
  statement("UPDATE tasks SET lease_id = ?, lease_expires_at = ? WHERE id = ?")
      .bind(1, lease_id)
      .bind(2, r.lease_expires_at)
      .bind(3, task_id)
      .run();
  return ClaimedTask{task_id, lease_id};
}

void SqliteStore::release_lease(std::int64_t task_id, std::int64_t lease_id, double now) {
  statement(
      "UPDATE tasks SET lease_expires_at = ? WHERE id = ? AND lease_id = ? AND state = 'leased' "
      "AND lease_expires_at > ?")
      .bind(1, now)
      .bind(2, task_id)
      .bind(3, lease_id)
      .bind(4, now)
      .run();
  if (sqlite3_changes(db_) == 0) return;
  statement("UPDATE leases SET expires_at = ? WHERE id = ?").bind(1, now).bind(2, lease_id).run();
}

std::optional<TaskRecord> SqliteStore::find_task(std::int64_t id) {
  static const std::string sql = std::string("SELECT ") + kTaskColumns + " FROM tasks WHERE id = ?";
  auto s = statement(sql.c_str());
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_task(s);
}

void SqliteStore::update_task(const TaskRecord& t) {
  statement(
      "UPDATE tasks SET state = ?, lease_id = ?, lease_expires_at = ?, completed_lease_id = ?, "
      "result_sha256 = ?, result_status = ?, result_body = ? WHERE id = ?")
      .bind(1, to_string(t.state))
      .bind(2, t.lease_id)
      .bind(3, t.lease_expires_at)
      .bind(4, t.completed_lease_id)
      .bind(5, t.result_sha256)
      .bind(6, t.result_status)
      .bind(7, t.result_body)
      .bind(8, t.id)
      .run();
}

AcceptOutcome SqliteStore::accept_result(const AcceptRequest& r) {
  AcceptOutcome out;
  std::optional<TaskRecord> task = find_task(r.task_id);
  if (!task) throw NotFound("task " + std::to_string(r.task_id) + " does not exist");
  out.status = classify_upload(*task, r);
  out.task = std::move(*task);
  if (out.status != AcceptStatus::kAccepted) return out;
  std::optional<RoundRecord> round = find_round(out.task.population_id, out.task.round);
  if (!round) throw NotFound("the round of task " + std::to_string(r.task_id) + " is missing");
  const bool train = out.task.kind == TaskKind::kTrain;
  if (train && round->status != RoundStatus::kOpen) {
    out.status = AcceptStatus::kRoundClosed;
    return out;
  }
  apply_delta(*round, out.task.kind, r.delta);
  update_round(*round);
  if (train) {
    statement(
        "INSERT INTO results (population_id, round, seq, task_id, bytes) VALUES (?, ?, ?, ?, ?)")
        .bind(1, round->population_id)
        .bind(2, round->number)
        .bind(3, static_cast<std::int64_t>(round->reports))
        .bind(4, r.task_id)
        .bind_blob(5, r.train_bytes)
        .run();
  }
  complete_task(out.task, r, round->reports);
  update_task(out.task);
  if (train) out.seq = round->reports;
  out.round = std::move(*round);
  return out;
}

// Every task SQLite creates is leased at once.
bool SqliteStore::has_leasable_task(const std::string& population_id, int round, double now) {
  return has_expired_lease(population_id, round, now);
}

bool SqliteStore::has_expired_lease(const std::string& population_id, int round, double now) {
  auto s = statement(
      "SELECT 1 FROM tasks WHERE population_id = ? AND round = ? AND kind IN ('train', "
      "'evaluate') AND state = 'leased' AND lease_expires_at <= ? LIMIT 1");
  s.bind(1, population_id).bind(2, round).bind(3, now);
  return s.step();
}

std::optional<double> SqliteStore::next_lease_expiry(const std::string& population_id, int round,
                                                     double now) {
  auto s = statement(
      "SELECT min(lease_expires_at) FROM tasks WHERE population_id = ? AND round = ? AND "
      "kind IN ('train', 'evaluate') AND state = 'leased' AND lease_expires_at > ?");
  s.bind(1, population_id).bind(2, round).bind(3, now);
  if (!s.step() || s.is_null(0)) return std::nullopt;
  return s.real(0);
}

std::int64_t SqliteStore::count_active_leases(double now) {
  auto s = statement("SELECT count(*) FROM tasks WHERE state = 'leased' AND lease_expires_at > ?");
  s.bind(1, now);
  s.step();
  return s.int64(0);
}

std::vector<LeaseRecord> SqliteStore::list_leases(std::int64_t task_id) {
  auto s = statement(
      "SELECT id, task_id, token_hash, expires_at FROM leases WHERE task_id = ? ORDER BY id");
  s.bind(1, task_id);
  std::vector<LeaseRecord> out;
  while (s.step()) out.push_back({s.int64(0), s.int64(1), s.text(2), s.real(3)});
  return out;
}

// ---- results and checkpoints

std::vector<ResultRecord> SqliteStore::list_results(const std::string& population_id, int round,
                                                    std::int64_t after_seq) {
  auto s = statement(
      "SELECT seq, task_id, bytes FROM results WHERE population_id = ? AND round = ? AND seq > ? "
      "ORDER BY seq");
  s.bind(1, population_id).bind(2, round).bind(3, after_seq);
  std::vector<ResultRecord> out;
  while (s.step()) out.push_back({population_id, round, s.int64(0), s.int64(1), s.blob(2)});
  return out;
}

void SqliteStore::put_checkpoint(const CheckpointRecord& c) {
  statement(
      "INSERT INTO checkpoints (population_id, round, seq, bytes) VALUES (?, ?, ?, ?) "
      "ON CONFLICT (population_id, round) DO UPDATE SET seq = excluded.seq, "
      "bytes = excluded.bytes")
      .bind(1, c.population_id)
      .bind(2, c.round)
      .bind(3, c.seq)
      .bind_blob(4, c.bytes)
      .run();
}

std::optional<CheckpointRecord> SqliteStore::find_checkpoint(const std::string& population_id,
                                                             int round) {
  auto s = statement("SELECT seq, bytes FROM checkpoints WHERE population_id = ? AND round = ?");
  s.bind(1, population_id).bind(2, round);
  if (!s.step()) return std::nullopt;
  return CheckpointRecord{population_id, round, s.int64(0), s.blob(1)};
}

// ---- rejections

bool SqliteStore::add_rejection(const RefusedUpload& upload) {
  if (upload.lease_id != 0) {
    statement("UPDATE leases SET refused_sha256 = ? WHERE id = ? AND refused_sha256 <> ?")
        .bind(1, upload.result_sha256)
        .bind(2, upload.lease_id)
        .bind(3, upload.result_sha256)
        .run();
    if (sqlite3_changes(db_) == 0) return false;
  }
  statement(
      "INSERT INTO rejections (population_id, reason, count) VALUES (?, ?, 1) "
      "ON CONFLICT (population_id, reason) DO UPDATE SET count = count + 1")
      .bind(1, upload.population_id)
      .bind(2, upload.reason)
      .run();
  return true;
}

std::map<std::string, std::int64_t> SqliteStore::rejections(const std::string& population_id) {
  auto s = statement("SELECT reason, count FROM rejections WHERE population_id = ?");
  s.bind(1, population_id);
  std::map<std::string, std::int64_t> out;
  while (s.step()) out[s.text(0)] = s.int64(1);
  return out;
}

}  // namespace fedleaf::server
