#include "server/store/postgres_schema_setup.h"

#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <thread>

#include "core/error.h"
#include "server/store/postgres_schema.h"
#include "server/store/postgres_statement.h"
#include "server/store/postgres_store.h"

namespace fedleaf::server {
namespace {

constexpr const char* kSchemaLock = "SELECT pg_advisory_xact_lock(7240113)";

PgRows query(pg_conn* conn, const char* sql) { return PgRows(PgResult(PQexec(conn, sql), sql)); }

// The version the database holds; nullopt before the schema exists. Takes no lock but
// schema_version's ACCESS SHARE, which no server's transaction conflicts with.
std::optional<int> read_version(pg_conn* conn) {
  if (query(conn, "SELECT to_regclass('schema_version') IS NOT NULL").text(0, 0) != "t") {
    return std::nullopt;
  }
  PgRows rows = query(conn, "SELECT version FROM schema_version");
  if (rows.size() == 0) return std::nullopt;
  return rows.int32(0, 0);
}

void check_readable(int found) {
  constexpr int expected = PostgresStore::kSchemaVersion;
  if (found >= 1 && found <= expected) return;
  throw Error("postgres store: the database's schema version is " + std::to_string(found) +
              ", this server's is " + std::to_string(expected) + " (it reads 1 to " +
              std::to_string(expected) + ", migrating the older ones): " +
              (found > expected ? "a newer server migrated it; run that version"
                                : "not a version fedleaf ever wrote"));
}

void create_or_migrate(pg_conn* conn, const PostgresSchemaSetup& setup) {
  const long timeout_ms = std::max(1L, std::lround(setup.lock_timeout_s * 1000));
  pg_exec(conn, "BEGIN");
  try {
    pg_exec(conn, ("SET LOCAL lock_timeout = " + std::to_string(timeout_ms)).c_str());
    pg_exec(conn, kSchemaLock);
    // Read again under the lock: another server may have created or migrated it meanwhile.
    const std::optional<int> found = read_version(conn);
    if (found != PostgresStore::kSchemaVersion) {
      if (found) check_readable(*found);
      for (const std::string& sql : postgres_schema()) pg_exec(conn, sql.c_str());
      const std::string version = std::to_string(PostgresStore::kSchemaVersion);
      if (found) {
        for (int v = *found; v < PostgresStore::kSchemaVersion; ++v) {
          pg_exec(conn, kPostgresMigrations.at(v - 1));
        }
        pg_exec(conn, ("UPDATE schema_version SET version = " + version).c_str());
      } else {
        pg_exec(conn, ("INSERT INTO schema_version (version) VALUES (" + version + ")").c_str());
      }
      for (const char* sql : kPostgresIndexesAfterMigrations) pg_exec(conn, sql);
    }
    pg_exec(conn, "COMMIT");
  } catch (...) {
    PQclear(PQexec(conn, "ROLLBACK"));
    throw;
  }
}

}  // namespace

void set_up_postgres_schema(pg_conn* conn, const PostgresSchemaSetup& setup) {
  double pause_s = setup.retry_pause_s;
  for (int attempt = 1;; ++attempt) {
    const std::optional<int> found = read_version(conn);
    if (found == PostgresStore::kSchemaVersion) return;
    if (found) check_readable(*found);
    const char* step = found ? "migrate" : "create";
    try {
      create_or_migrate(conn, setup);
      return;
    } catch (const PgLockFailure& e) {
      if (attempt >= setup.attempts) {
        throw Error(std::string("postgres store: could not ") + step +
                    " the schema: " + std::to_string(attempt) +
                    " attempts each lost a lock race (last: " + e.what() + ")");
      }
      if (setup.logger) {
        setup.logger->warn(
            "event=schema_setup_retry step={} attempt={} attempts={} pause_s={} error=\"{}\"", step,
            attempt, setup.attempts, pause_s, e.what());
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(pause_s));
      pause_s = std::min(pause_s * 2, setup.max_retry_pause_s);
    }
  }
}

}  // namespace fedleaf::server
