// SqliteStatement: a cached prepared statement of SqliteStore — binds by 1-based position, steps,
// reads columns, and resets itself when it goes out of scope so the cache can hand it out again.
//
//   SqliteStatement s(db, stmt);
//   s.bind(1, population_id).bind(2, round);
//   while (s.step()) rows.push_back(s.text(0));
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "core/error.h"

namespace fedleaf::server {

// Throws Conflict for a primary-key or unique constraint (the caller's operation was a
// duplicate), fedleaf::Error naming `what` and SQLite's message otherwise.
[[noreturn]] void sqlite_fail(sqlite3* db, const std::string& what);

// A cached prepared statement: binds by 1-based position, steps, reads columns; resets the
// statement when it goes out of scope so the cache can hand it out again.
class SqliteStatement {
 public:
  SqliteStatement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;
  ~SqliteStatement() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  SqliteStatement& bind(int i, const std::string& v) {
    check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC));
    return *this;
  }
  // `v` must outlive the statement's step (the names of store.h's enums do).
  SqliteStatement& bind(int i, const char* v) {
    check(sqlite3_bind_text(stmt_, i, v, -1, SQLITE_STATIC));
    return *this;
  }
  SqliteStatement& bind_blob(int i, const std::string& v) {
    check(sqlite3_bind_blob64(stmt_, i, v.data(), v.size(), SQLITE_STATIC));
    return *this;
  }
  SqliteStatement& bind(int i, std::int64_t v) {
    check(sqlite3_bind_int64(stmt_, i, v));
    return *this;
  }
  SqliteStatement& bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
  SqliteStatement& bind(int i, double v) {
    check(sqlite3_bind_double(stmt_, i, v));
    return *this;
  }

  // True when a row is available, false when done.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    sqlite_fail(db_, sqlite3_sql(stmt_));
  }
  void run() {
    if (step()) throw Error("sqlite store: statement returned rows: " + sql());
  }

  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  std::string blob(int col) const {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, col));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  std::int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  int int32(int col) const { return sqlite3_column_int(stmt_, col); }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string sql() const { return sqlite3_sql(stmt_); }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) sqlite_fail(db_, "bind");
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

}  // namespace fedleaf::server
