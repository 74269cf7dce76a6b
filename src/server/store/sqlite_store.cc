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
    // Builds that default to secure_delete=ON (Debian's, this machine's) zero every page a
    // delete frees and write it through the WAL and again at its checkpoint: dropping a demo
    // round's 16 results (5 MB of overflow pages) cost 12 ms of CPU, 2.5 ms with FAST, which
    // zeroes deleted content only on pages written anyway. The freed overflow pages keep their
    // bytes until the next round's results reuse them, as the WAL keeps those results until it
    // wraps: the file was never a place results vanish from at once.
    exec("PRAGMA secure_delete=FAST");
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
    for (const std::string& sql : sqlite_schema()) exec(sql.c_str());
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
    for (const char* sql : kSqliteIndexesAfterMigrations) exec(sql);
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
  static const std::string sql = insert_sql(kPopulationsTable, Dialect::kSqlite);
  const std::vector<Value> values = values_of(p);
  auto s = statement(sql.c_str());
  bind_values(s, values, 1);
  s.run();
  insert_round(round0);
  insert_model(model0);
  insert_client_token({p.id, 0, p.client_token_hash, p.created_at, 0});
}

std::optional<PopulationRecord> SqliteStore::find_population(const std::string& id) {
  static const std::string sql =
      std::string("SELECT ") + column_list(kPopulationsTable) + " FROM populations WHERE id = ?";
  auto s = statement(sql.c_str());
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_population(s);
}

std::vector<PopulationRecord> SqliteStore::list_populations() {
  static const std::string sql =
      std::string("SELECT ") + column_list(kPopulationsTable) + " FROM populations ORDER BY id";
  auto s = statement(sql.c_str());
  std::vector<PopulationRecord> out;
  while (s.step()) out.push_back(read_population(s));
  return out;
}

// ---- rounds

void SqliteStore::insert_round(const RoundRecord& r) {
  static const std::string sql = insert_sql(kRoundsTable, Dialect::kSqlite);
  const std::vector<Value> values = values_of(r);
  auto s = statement(sql.c_str());
  bind_values(s, values, 1);
  s.run();
}

std::optional<RoundRecord> SqliteStore::find_round(const std::string& population_id, int number) {
  static const std::string sql = std::string("SELECT ") + column_list(kRoundsTable) +
                                 " FROM rounds WHERE population_id = ? AND number = ?";
  auto s = statement(sql.c_str());
  s.bind(1, population_id).bind(2, number);
  if (!s.step()) return std::nullopt;
  return read_round(s);
}

std::vector<RoundRecord> SqliteStore::list_rounds(const std::string& population_id) {
  static const std::string sql = std::string("SELECT ") + column_list(kRoundsTable) +
                                 " FROM rounds WHERE population_id = ? ORDER BY number";
  auto s = statement(sql.c_str());
  s.bind(1, population_id);
  std::vector<RoundRecord> out;
  while (s.step()) out.push_back(read_round(s));
  return out;
}

void SqliteStore::update_round(const RoundRecord& r) {
  // Every column after the key (population_id, number).
  static const std::string sql = "UPDATE rounds SET " +
                                 assignments_sql(kRoundsTable, 2, Dialect::kSqlite) +
                                 " WHERE population_id = ? AND number = ?";
  const std::vector<Value> values = values_of(r);
  auto s = statement(sql.c_str());
  const int next = bind_values(s, values, 1, 2);
  s.bind(next, r.population_id).bind(next + 1, r.number);
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
  if (close.optimizer_state) replace_optimizer_state(*close.optimizer_state);
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

}  // namespace fedleaf::server
