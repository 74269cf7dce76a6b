#include "server/backup_command.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "server/store/sqlite_backup.h"

namespace fedleaf::server {

namespace {

bool is_postgres_url(const std::string& db) {
  return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0;
}

double megabytes(std::uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// At most one line a second, and each stage's last one.
class ProgressLines {
 public:
  void operator()(const SqliteBackupProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    const bool last = p.done == p.total;
    if (!last && now - shown_ < std::chrono::seconds(1)) return;
    shown_ = now;
    const double percent =
        p.total ? 100.0 * static_cast<double>(p.done) / static_cast<double>(p.total) : 100.0;
    if (p.stage == SqliteBackupProgress::Stage::kDatabase) {
      std::fprintf(stderr, "backup: database %llu/%llu pages (%.0f%%)\n",
                   static_cast<unsigned long long>(p.done),
                   static_cast<unsigned long long>(p.total), percent);
    } else {
      std::fprintf(stderr, "backup: model files %llu/%llu (%.1f MB)\n",
                   static_cast<unsigned long long>(p.done),
                   static_cast<unsigned long long>(p.total), megabytes(p.bytes));
    }
  }

 private:
  std::chrono::steady_clock::time_point shown_{};
};

}  // namespace

int run_backup_command(int argc, char** argv) {
  CLI::App app{
      "Online backup of a SQLite fedleaf-server database while it serves: the database (SQLite's "
      "backup API, one consistent snapshot) and exactly the model files of <db>-models/ that the "
      "copy names, into DIR/<db name> and DIR/<db name>-models/. Restore: stop the server, remove "
      "the database, its -wal and -shm files and its -models directory, copy both back "
      "(docs/deploy.md \"Backups\").",
      "fedleaf-server backup"};
  std::string db;
  std::string to;
  SqliteBackupOptions options;
  app.add_option("--db", db,
                 "the SQLite database file a fedleaf-server serves (--db of the server)")
      ->required();
  app.add_option("--to", to,
                 "a new directory for the backup (or an empty one); its parent must exist")
      ->required();
  app.add_option("--pages-per-step", options.pages_per_step,
                 "database pages copied per step (all steps read one snapshot)")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (is_postgres_url(db)) {
    std::cerr << "fedleaf-server backup: --db is a PostgreSQL URL: back it up with pg_dump or a "
                 "base backup (docs/deploy.md \"Backups\")\n";
    return 2;
  }
  options.progress = ProgressLines();
  try {
    const SqliteBackupResult done = backup_sqlite_database(db, to, options);
    std::printf("backup of %s: %s (%llu pages, %.1f MB), %s (%llu model files, %.1f MB)\n",
                db.c_str(), done.database.c_str(), static_cast<unsigned long long>(done.pages),
                megabytes(done.database_bytes), done.model_directory.c_str(),
                static_cast<unsigned long long>(done.model_files), megabytes(done.model_bytes));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "fedleaf-server backup: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace fedleaf::server
