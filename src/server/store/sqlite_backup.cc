#include "server/store/sqlite_backup.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "core/error.h"
#include "server/store/model_files.h"

namespace fedleaf::server {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail_errno(const std::string& what, const std::string& path) {
  throw Error("backup: " + what + " '" + path + "': " + std::strerror(errno));
}

class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  Descriptor(Descriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Descriptor& operator=(Descriptor&&) = delete;
  Descriptor(const Descriptor&) = delete;
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

void fsync_path(const std::string& path, int flags) {
  const Descriptor fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (fd.get() < 0) fail_errno("cannot open", path);
  if (::fsync(fd.get()) != 0) fail_errno("cannot fsync", path);
}

class Connection {
 public:
  Connection(const std::string& path, int flags) {
    if (sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
      const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw Error("backup: cannot open the database '" + path + "': " + message);
    }
    sqlite3_busy_timeout(db_, 5000);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { sqlite3_close(db_); }
  sqlite3* get() const { return db_; }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("backup: " + what + ": " + sqlite3_errmsg(db_));
  }
  void exec(const char* sql, const std::string& what) const {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(what);
  }
  // The first column of every row of `sql`, as text.
  std::vector<std::string> column(const char* sql, const std::string& what) const {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) fail(what);
    std::vector<std::string> out;
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      out.emplace_back(text ? text : "");
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) fail(what);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

// Everything under `staging` is removed unless release() ran (the backup was renamed into place).
class Staging {
 public:
  explicit Staging(std::string path) : path_(std::move(path)) {
    if (::mkdir(path_.c_str(), 0700) != 0) fail_errno("cannot create", path_);
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging() {
    if (path_.empty()) return;
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  void release() { path_.clear(); }

 private:
  std::string path_;
};

// `to` without trailing separators; refused when it exists as anything but an empty directory.
std::string check_destination(const std::string& to) {
  std::string path = to;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path.empty()) throw Error("backup: the destination is an empty path");
  std::error_code error;
  const fs::file_status status = fs::symlink_status(path, error);
  if (fs::exists(status)) {
    if (!fs::is_directory(status) || !fs::is_empty(path, error) || error) {
      throw Error("backup: '" + path +
                  "' exists and is not an empty directory: name a new directory for each backup");
    }
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, error)) {
    throw Error("backup: the directory '" + parent.string() + "' (where '" + path +
                "' goes) does not exist");
  }
  return path;
}

void check_source(const std::string& db) {
  struct stat info {};
  if (::stat(db.c_str(), &info) != 0) fail_errno("no database at", db);
  if (!S_ISREG(info.st_mode)) throw Error("backup: '" + db + "' is not a regular file");
}

// The model files the snapshot's rows name (schema 3 on: `storage` is 'file'), by ETag.
std::set<std::string> named_model_files(const Connection& source, const std::string& db) {
  const std::vector<std::string> tables = source.column(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('models', "
      "'optimizer_states')",
      "cannot read the schema of '" + db + "'");
  const std::set<std::string> have(tables.begin(), tables.end());
  if (have.count("models") == 0) {
    throw Error("backup: '" + db + "' is not a fedleaf-server database (it has no models table)");
  }
  std::string sql = "SELECT etag FROM models WHERE storage = 'file'";
  if (have.count("optimizer_states") != 0) {
    sql += " UNION SELECT etag FROM optimizer_states WHERE storage = 'file'";
  }
  const std::vector<std::string> etags =
      source.column(sql.c_str(), "cannot list the model files '" + db + "' names");
  return {etags.begin(), etags.end()};
}

// Opens every named file of `directory`; when one is missing, returns nothing and sets `missing`
// to its path (the caller retries on a newer snapshot, or names it). `names` checks each name
// (ModelFiles' rule) without touching `directory`.
std::map<std::string, Descriptor> open_model_files(const std::set<std::string>& etags,
                                                   const std::string& directory,
                                                   const ModelFiles& names, std::string& missing) {
  std::map<std::string, Descriptor> out;
  for (const std::string& etag : etags) {
    const std::string path = directory + "/" + fs::path(names.path_of(etag)).filename().string();
    Descriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (fd.get() < 0) {
      if (errno != ENOENT) fail_errno("cannot open the model file", path);
      missing = path;
      return {};
    }
    struct stat info {};
    if (::fstat(fd.get(), &info) != 0) fail_errno("cannot stat", path);
    if (!S_ISREG(info.st_mode)) throw Error("backup: '" + path + "' is not a regular file");
    out.emplace(etag, std::move(fd));
  }
  return out;
}

std::uint64_t copy_file(int from, const std::string& from_path, const std::string& to_path) {
  const Descriptor to(::open(to_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (to.get() < 0) fail_errno("cannot create", to_path);
  std::vector<char> buffer(1 << 20);
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(from, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno("cannot read", from_path);
    if (n == 0) break;
    ssize_t written = 0;
    while (written < n) {
      const ssize_t w = ::write(to.get(), buffer.data() + written, n - written);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) fail_errno("cannot write", to_path);
      written += w;
    }
    total += static_cast<std::uint64_t>(n);
  }
  if (::fsync(to.get()) != 0) fail_errno("cannot fsync", to_path);
  return total;
}

// The pages of `source` (inside its open read transaction, which every step reuses) into a new
// database at `path`.
std::uint64_t copy_database(const Connection& source, const std::string& db,
                            const std::string& path, const SqliteBackupOptions& options) {
  std::uint64_t pages = 0;
  {
    const Connection destination(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    sqlite3_backup* backup = sqlite3_backup_init(destination.get(), "main", source.get(), "main");
    if (!backup) destination.fail("cannot start copying '" + db + "' to '" + path + "'");
    int rc = SQLITE_OK;
    while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
      rc = sqlite3_backup_step(backup, options.pages_per_step);
      pages = static_cast<std::uint64_t>(sqlite3_backup_pagecount(backup));
      if (options.progress && (rc == SQLITE_OK || rc == SQLITE_DONE)) {
        SqliteBackupProgress progress;
        progress.done = pages - static_cast<std::uint64_t>(sqlite3_backup_remaining(backup));
        progress.total = pages;
        options.progress(progress);
      }
      if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) sqlite3_sleep(10);
    }
    sqlite3_backup_finish(backup);
    if (rc != SQLITE_DONE) {
      throw Error("backup: copying '" + db + "' to '" + path + "' failed: " + sqlite3_errstr(rc));
    }
  }
  fsync_path(path, O_RDONLY);
  return pages;
}

}  // namespace

SqliteBackupResult backup_sqlite_database(const std::string& db, const std::string& to,
                                          const SqliteBackupOptions& options) {
  if (options.pages_per_step < 1) throw Error("backup: pages_per_step must be at least 1");
  check_source(db);
  const std::string destination = check_destination(to);
  const std::string name = fs::path(db).filename().string();
  const std::string source_directory = db + "-models";
  Staging staging(destination + ".partial-" + std::to_string(::getpid()));
  const ModelFiles staged_files(staging.path() + "/" + name + "-models");

  const Connection source(db, SQLITE_OPEN_READONLY);
  // One read transaction from the file list to the last page: the copy and the list are the
  // same snapshot. A file its rows name but the directory lacks is, on a live server, a model
  // dropped (and its file deleted) after the snapshot began: a newer snapshot no longer names it.
  std::map<std::string, Descriptor> pinned;
  std::set<std::string> etags;
  std::string missing;
  for (int attempt = 0;; ++attempt) {
    source.exec("BEGIN", "cannot begin a read transaction on '" + db + "'");
    etags = named_model_files(source, db);
    missing.clear();
    pinned = open_model_files(etags, source_directory, staged_files, missing);
    if (missing.empty()) break;
    source.exec("ROLLBACK", "cannot end the read transaction on '" + db + "'");
    if (attempt == 2) {
      throw Error("backup: '" + db + "' names the model file '" + missing +
                  "', which does not exist (the server quarantines the population whose "
                  "current model it is): no consistent backup can be made");
    }
  }

  SqliteBackupResult result;
  const std::string staged_database = staging.path() + "/" + name;
  result.pages = copy_database(source, db, staged_database, options);
  source.exec("ROLLBACK", "cannot end the read transaction on '" + db + "'");
  result.database_bytes = fs::file_size(staged_database);

  SqliteBackupProgress progress;
  progress.stage = SqliteBackupProgress::Stage::kModelFiles;
  progress.total = pinned.size();
  for (const auto& [etag, fd] : pinned) {
    const std::string to_path = staged_files.path_of(etag);
    progress.bytes += copy_file(
        fd.get(), source_directory + "/" + fs::path(to_path).filename().string(), to_path);
    progress.done += 1;
    if (options.progress) options.progress(progress);
  }
  fsync_path(staged_files.directory(), O_RDONLY | O_DIRECTORY);
  fsync_path(staging.path(), O_RDONLY | O_DIRECTORY);
  result.model_files = progress.done;
  result.model_bytes = progress.bytes;

  if (::rename(staging.path().c_str(), destination.c_str()) != 0) {
    fail_errno("cannot rename '" + staging.path() + "' to", destination);
  }
  staging.release();
  const std::string parent = fs::path(destination).parent_path().string();
  fsync_path(parent.empty() ? "." : parent, O_RDONLY | O_DIRECTORY);
  result.database = destination + "/" + name;
  result.model_directory = destination + "/" + name + "-models";
  return result;
}

}  // namespace fedleaf::server
