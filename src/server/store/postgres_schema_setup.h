// Brings a PostgreSQL database to the schema this server reads (postgres_schema.h, version
// PostgresStore::kSchemaVersion) when a PostgresStore opens, without pausing the servers
// already serving from it.
//
//   PostgresSchemaSetup setup;
//   setup.logger = logger;                // retries are logged (warn)
//   set_up_postgres_schema(conn, setup);  // on the connection that will serve, before it serves
//
// A start reads the version first (schema_version only) and, when it is current — every start
// but the first on an empty database and the first after an upgrade — runs no DDL and takes no
// lock on any other table. Creating or migrating runs the schema and the migrations in one
// transaction under an advisory lock (servers starting together create it once); that step
// locks tables (CREATE INDEX takes SHARE on its table, ALTER TABLE ACCESS EXCLUSIVE), so it
// waits for every open write transaction on them and pauses the servers' writers until it
// commits (docs/deploy.md "Locks"). Each of its lock waits gives up after lock_timeout_s, and
// the attempt is retried — a start that loses a lock race to a serving server's batch, or to
// another starting server, waits and tries again instead of failing.
//
// Errors: fedleaf::Error naming the found and the expected version when the database's version
// is not one this server reads (not retried: a real mismatch); naming the attempts when every
// attempt lost its lock race; a failed statement's message otherwise.
#pragma once

#include <memory>

struct pg_conn;

namespace spdlog {
class logger;
}

namespace fedleaf::server {

struct PostgresSchemaSetup {
  // The wait for each lock of a creation or migration before the attempt gives up. Below
  // PostgreSQL's deadlock_timeout (1 s by default): in a lock cycle with a server's batch, the
  // start gives up before the deadlock check could abort the batch instead.
  double lock_timeout_s = 0.5;
  // Attempts in all; the pause before the second, doubled before each next one up to the max.
  int attempts = 12;
  double retry_pause_s = 0.1;
  double max_retry_pause_s = 2;
  std::shared_ptr<spdlog::logger> logger;  // may be null
};

void set_up_postgres_schema(pg_conn* conn, const PostgresSchemaSetup& setup);

}  // namespace fedleaf::server
