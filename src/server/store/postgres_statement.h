// PostgresStore's libpq plumbing: a connection, a checked result, statement parameters and the
// rows of a statement read as text.
//
//   pg_conn* conn = pg_connect("postgresql://fedleaf@127.0.0.1:55432/fedleaf");
//   PgParams params;
//   params.text(population_id).integer(round);
//   PgRows rows(PgResult(PQexecParams(conn, sql, params.size(), nullptr, params.pointers().data(),
//                                     params.lengths().data(), params.formats().data(), 0), sql));
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace fedleaf::server {

// A connection to `url`; fedleaf::Error naming the reason when it cannot connect.
pg_conn* pg_connect(const std::string& url);

// A statement that gave up waiting for a lock (lock_timeout) or was aborted to break a
// deadlock: its transaction is lost, and the same transaction run again may succeed.
class PgLockFailure : public Error {
 public:
  using Error::Error;
};

// Takes ownership of a result; throws on an error status (unique violation: Conflict; a lock
// not granted: PgLockFailure).
class PgResult {
 public:
  PgResult(pg_result* result, const std::string& what) : result_(result) {
    const ExecStatusType status = PQresultStatus(result_);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return;
    const char* state = PQresultErrorField(result_, PG_DIAG_SQLSTATE);
    const std::string message = "postgres store: " + what + ": " + PQresultErrorMessage(result_);
    const bool unique = state != nullptr && std::strcmp(state, "23505") == 0;
    // lock_not_available, deadlock_detected
    const bool lock =
        state != nullptr && (std::strcmp(state, "55P03") == 0 || std::strcmp(state, "40P01") == 0);
    PQclear(result_);
    if (unique) throw Conflict(message);
    if (lock) throw PgLockFailure(message);
    throw Error(message);
  }
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  PgResult(PgResult&& other) noexcept : result_(std::exchange(other.result_, nullptr)) {}
  ~PgResult() { PQclear(result_); }
  pg_result* get() const { return result_; }

 private:
  pg_result* result_;
};

// Runs `sql` (no parameters, no rows); throws as PgResult does.
void pg_exec(pg_conn* conn, const char* sql);

// A double as text that reads back to the same value.
inline std::string format_real(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return buffer;
}

// Statement parameters: text, except blobs (binary).
class PgParams {
 public:
  PgParams& text(std::string v) {
    values_.push_back(std::move(v));
    formats_.push_back(0);
    return *this;
  }
  PgParams& text(const char* v) { return text(std::string(v)); }
  PgParams& integer(std::int64_t v) { return text(std::to_string(v)); }
  PgParams& real(double v) { return text(format_real(v)); }
  PgParams& blob(const std::string& v) {
    values_.push_back(v);
    formats_.push_back(1);
    return *this;
  }
  int size() const { return static_cast<int>(values_.size()); }
  std::vector<const char*> pointers() const {
    std::vector<const char*> out;
    for (const std::string& v : values_) out.push_back(v.data());
    return out;
  }
  std::vector<int> lengths() const {
    std::vector<int> out;
    for (const std::string& v : values_) out.push_back(static_cast<int>(v.size()));
    return out;
  }
  const std::vector<int>& formats() const { return formats_; }

 private:
  std::vector<std::string> values_;
  std::vector<int> formats_;
};

// The statement a pipeline ends with: prepared `name` with `params`, or (name null) `sql`
// without parameters.
struct PgLast {
  const char* name = nullptr;
  const PgParams* params = nullptr;
  const char* sql = nullptr;
};

// Sends `before` (statements without parameters whose rows are not read: transaction control)
// and then `last` in one round trip (libpq pipeline mode) and returns the result of `last`.
// Every result is read before anything throws, so the connection is left ready; the first
// failure throws as PgResult does (`what` names `last`).
PgResult pg_pipeline(pg_conn* conn, const std::vector<const char*>& before, const PgLast& last,
                     const std::string& what);

// The rows of a statement, read as text (bytea unescaped).
class PgRows {
 public:
  explicit PgRows(PgResult result) : result_(std::move(result)) {}
  int size() const { return PQntuples(result_.get()); }
  std::int64_t affected() const { return std::atoll(PQcmdTuples(result_.get())); }
  bool is_null(int row, int col) const { return PQgetisnull(result_.get(), row, col) != 0; }
  std::string text(int row, int col) const {
    return std::string(PQgetvalue(result_.get(), row, col),
                       static_cast<std::size_t>(PQgetlength(result_.get(), row, col)));
  }
  std::int64_t int64(int row, int col) const {
    return std::atoll(PQgetvalue(result_.get(), row, col));
  }
  int int32(int row, int col) const { return static_cast<int>(int64(row, col)); }
  double real(int row, int col) const {
    return std::strtod(PQgetvalue(result_.get(), row, col), nullptr);
  }
  std::string blob(int row, int col) const {
    std::size_t length = 0;
    unsigned char* bytes = PQunescapeBytea(
        reinterpret_cast<const unsigned char*>(PQgetvalue(result_.get(), row, col)), &length);
    if (bytes == nullptr) throw Error("postgres store: cannot decode a bytea value");
    std::string out(reinterpret_cast<const char*>(bytes), length);
    PQfreemem(bytes);
    return out;
  }

 private:
  PgResult result_;
};

}  // namespace fedleaf::server
