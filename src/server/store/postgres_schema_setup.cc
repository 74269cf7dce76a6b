#include "server/store/postgres_schema_setup.h"

#include <libpq-fe.h>

#include <optional>
#include <string>

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
  if (found >= 1 && found <= PostgresStore::kSchemaVersion) return;
  throw Error("postgres store: schema version " + std::to_string(found) +
              " is not one this server reads (1 to " +
              std::to_string(PostgresStore::kSchemaVersion) + ")");
}

void create_or_migrate(pg_conn* conn) {
  pg_exec(conn, "BEGIN");
  try {
    pg_exec(conn, kSchemaLock);
    // Read again under the lock: another server may have created or migrated it meanwhile.
    const std::optional<int> found = read_version(conn);
    if (found != PostgresStore::kSchemaVersion) {
      if (found) check_readable(*found);
      for (const char* sql : kPostgresSchema) pg_exec(conn, sql);
      const std::string version = std::to_string(PostgresStore::kSchemaVersion);
      if (found) {
        for (int v = *found; v < PostgresStore::kSchemaVersion; ++v) {
          pg_exec(conn, kPostgresMigrations.at(v - 1));
        }
        pg_exec(conn, ("UPDATE schema_version SET version = " + version).c_str());
      } else {
        pg_exec(conn, ("INSERT INTO schema_version (version) VALUES (" + version + ")").c_str());
      }
    }
    pg_exec(conn, "COMMIT");
  } catch (...) {
    PQclear(PQexec(conn, "ROLLBACK"));
    throw;
  }
}

}  // namespace

void set_up_postgres_schema(pg_conn* conn) {
  const std::optional<int> found = read_version(conn);
  if (found == PostgresStore::kSchemaVersion) return;
  if (found) check_readable(*found);
  create_or_migrate(conn);
}

}  // namespace fedleaf::server
