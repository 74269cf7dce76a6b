// backup_sqlite_database: an online backup of a SQLite task repository (SqliteStore) while its
// server keeps serving — the database, copied with SQLite's backup API, and exactly the model
// files of `<db>-models/` that the copy names.
//
//   SqliteBackupOptions options;
//   options.progress = [](const SqliteBackupProgress& p) { ... };  // between steps
//   SqliteBackupResult done = backup_sqlite_database("var/tasks.db", "backups/monday", options);
//   // backups/monday/tasks.db and backups/monday/tasks.db-models/<etag>.safetensors
//
// Contracts:
// - Consistent: the copy is the database as one read transaction saw it (the steps run inside
//   that transaction, so a commit of the server between two steps neither restarts the copy nor
//   shows up in it), and every model file that copy names is in the backup, byte for byte. The
//   files are opened before the first page is copied: a file the server's retention deletes
//   meanwhile (the database copied still names it) is read through its open descriptor.
// - Not in the server's way: the database is opened read-only and, in WAL mode (SqliteStore's),
//   a reader blocks no writer; the server's checkpoints only stop at the copy's snapshot until
//   it ends (its WAL grows by what it commits meanwhile).
// - All or nothing: everything is written into `<to>.partial-<pid>` beside `to`, fsynced, and
//   renamed to `to` at the end; any failure removes it. `to` must not exist, or be an empty
//   directory; its parent must exist.
// - Errors: fedleaf::Error naming the path and the reason (no database at `db`, a file that is
//   not a fedleaf database, `to` not empty, a model file the database names but the model
//   directory lacks, any I/O error).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace fedleaf::server {

struct SqliteBackupProgress {
  enum class Stage { kDatabase, kModelFiles };
  Stage stage = Stage::kDatabase;
  std::uint64_t done = 0;   // database pages, or model files, copied so far
  std::uint64_t total = 0;  // of the database, or of the model files the copy names
  std::uint64_t bytes = 0;  // bytes copied so far in this stage
};

struct SqliteBackupOptions {
  // Database pages copied per step; the progress callback runs after each step.
  int pages_per_step = 1024;
  std::function<void(const SqliteBackupProgress&)> progress;
};

struct SqliteBackupResult {
  std::string database;         // <to>/<file name of db>
  std::string model_directory;  // <to>/<file name of db>-models
  std::uint64_t pages = 0;
  std::uint64_t database_bytes = 0;
  std::uint64_t model_files = 0;
  std::uint64_t model_bytes = 0;
};

SqliteBackupResult backup_sqlite_database(const std::string& db, const std::string& to,
                                          const SqliteBackupOptions& options = {});

}  // namespace fedleaf::server
