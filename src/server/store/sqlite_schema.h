// The SQLite schema of the task repository (version SqliteStore::kSchemaVersion): one statement
// per entry, indexes next to their tables, the tables of records rendered from their column
// tables (store_tables.h). SqliteStore runs them on open.
//
//   for (const std::string& sql : sqlite_schema()) exec(sql.c_str());
#pragma once

#include <string>
#include <vector>

#include "server/store/store_tables.h"

namespace fedleaf::server {

inline std::vector<std::string> sqlite_schema() {
  return {
      R"sql(CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL))sql",
      create_table_sql(kPopulationsTable, Dialect::kSqlite),
      create_table_sql(kRoundsTable, Dialect::kSqlite),
      R"sql(CREATE TABLE IF NOT EXISTS models (
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         etag TEXT NOT NULL,
         bytes BLOB NOT NULL,
         storage TEXT NOT NULL DEFAULT 'blob' CHECK (storage IN ('blob', 'file')),
         PRIMARY KEY (population_id, round),
         FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)))sql",
      create_table_sql(kTasksTable, Dialect::kSqlite),
      R"sql(CREATE INDEX IF NOT EXISTS tasks_by_expiry
         ON tasks (population_id, round, kind, state, lease_expires_at))sql",
      R"sql(CREATE INDEX IF NOT EXISTS tasks_by_state ON tasks (state, lease_expires_at))sql",
      R"sql(CREATE TABLE IF NOT EXISTS leases (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         task_id INTEGER NOT NULL REFERENCES tasks(id),
         token_hash TEXT NOT NULL,
         expires_at REAL NOT NULL,
         refused_sha256 TEXT NOT NULL DEFAULT '',
         client_key TEXT NOT NULL DEFAULT ''))sql",
      R"sql(CREATE INDEX IF NOT EXISTS leases_by_task ON leases (task_id))sql",
      R"sql(CREATE TABLE IF NOT EXISTS results (
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         seq INTEGER NOT NULL,
         task_id INTEGER NOT NULL REFERENCES tasks(id),
         bytes BLOB NOT NULL,
         PRIMARY KEY (population_id, round, seq),
         FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)))sql",
      R"sql(CREATE TABLE IF NOT EXISTS checkpoints (
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         seq INTEGER NOT NULL,
         bytes BLOB NOT NULL,
         PRIMARY KEY (population_id, round),
         FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)))sql",
      R"sql(CREATE TABLE IF NOT EXISTS rejections (
         population_id TEXT NOT NULL REFERENCES populations(id),
         reason TEXT NOT NULL,
         count INTEGER NOT NULL,
         PRIMARY KEY (population_id, reason)))sql",
      // Version 5: the server optimizer's state with the latest model (OptimizerStateRecord).
      // Its bytes in a file of the model directory ('file': `bytes` empty) or in the row ('blob':
      // an in-memory store).
      R"sql(CREATE TABLE IF NOT EXISTS optimizer_states (
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         etag TEXT NOT NULL,
         bytes BLOB NOT NULL,
         storage TEXT NOT NULL CHECK (storage IN ('blob', 'file')),
         PRIMARY KEY (population_id, round),
         FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)))sql",
      // Version 8: each population's client tokens (ClientTokenRecord), by their hash.
      R"sql(CREATE TABLE IF NOT EXISTS client_tokens (
         population_id TEXT NOT NULL REFERENCES populations(id),
         id INTEGER NOT NULL,
         token_hash TEXT NOT NULL,
         created_at REAL NOT NULL,
         revoked_at REAL NOT NULL DEFAULT 0,
         PRIMARY KEY (population_id, id)))sql",
      R"sql(CREATE INDEX IF NOT EXISTS client_tokens_by_hash
         ON client_tokens (population_id, token_hash))sql",
      // Version 9: a private population's devices (DeviceRecord), found by their credential's
      // hash on every claim (devices_by_credential: a million devices cost a claim one index
      // probe).
      R"sql(CREATE TABLE IF NOT EXISTS devices (
         population_id TEXT NOT NULL REFERENCES populations(id),
         id TEXT NOT NULL,
         credential_hash TEXT NOT NULL,
         token_hash TEXT NOT NULL,
         enrolled_at REAL NOT NULL,
         revoked_at REAL NOT NULL DEFAULT 0,
         participations INTEGER NOT NULL DEFAULT 0,
         last_round INTEGER NOT NULL DEFAULT -1,
         PRIMARY KEY (population_id, id)))sql",
      R"sql(CREATE UNIQUE INDEX IF NOT EXISTS devices_by_credential
         ON devices (population_id, credential_hash))sql",
      // Version 10: each client token's enrollments in a population, numbered 1, 2, … in order
      // (enroll_device): the hourly limit reads the one enrollment `limit` back, an index probe
      // however many devices the token enrolled (version 9 counted the hour's rows).
      R"sql(CREATE TABLE IF NOT EXISTS device_enrollments (
         population_id TEXT NOT NULL REFERENCES populations(id),
         token_hash TEXT NOT NULL,
         seq INTEGER NOT NULL,
         enrolled_at REAL NOT NULL,
         PRIMARY KEY (population_id, token_hash, seq)))sql",
  };
}

// Migrations: kSqliteMigrations[v - 1] turns a version v database into version v + 1, in the
// same transaction as the version bump (a database is never left half migrated).
inline constexpr const char* kSqliteMigrations[] = {
    // 1 → 2: robust aggregation counts per round (clipped, capped, withheld), as JSON.
    "ALTER TABLE rounds ADD COLUMN robust_json TEXT NOT NULL DEFAULT '{}'",
    // 2 → 3: where a model's bytes are — 'blob' in `bytes`, 'file' in the model directory
    // (`bytes` empty). Models stored before stay blobs and are read as before. One statement,
    // written on two lines.
    // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
    "ALTER TABLE models ADD COLUMN storage TEXT NOT NULL DEFAULT 'blob' "
    "CHECK (storage IN ('blob', 'file'))",
    // 3 → 4: the bytes of each lease's last refused upload counted (add_rejection).
    "ALTER TABLE leases ADD COLUMN refused_sha256 TEXT NOT NULL DEFAULT ''",
    // 4 → 5: each population's server optimizer ('' is FedAvg, what every earlier population
    // ran); its state's table (optimizer_states) is created by the schema above.
    "ALTER TABLE populations ADD COLUMN server_optimizer TEXT NOT NULL DEFAULT ''",
    // 5 → 6: each population's buffered mode ('' is synchronous rounds, what every earlier
    // population ran).
    "ALTER TABLE populations ADD COLUMN buffered TEXT NOT NULL DEFAULT ''",
    // 6 → 7: each population's max_tasks_per_client (0: no bound, what every earlier population
    // ran) and the client key a lease was claimed under ('': none); leases_by_client is created
    // after the migrations (kSqliteIndexesAfterMigrations). Two statements, one sqlite3_exec.
    // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
    "ALTER TABLE populations ADD COLUMN max_tasks_per_client INTEGER NOT NULL DEFAULT 0; "
    "ALTER TABLE leases ADD COLUMN client_key TEXT NOT NULL DEFAULT ''",
    // 7 → 8: each population's operator pause (0: running, what every earlier population was),
    // why an operator finished it ('': it ran to its end) and its tokens' epoch; its client token
    // becomes token 0 of client_tokens (created by the schema above). One sqlite3_exec.
    // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
    "ALTER TABLE populations ADD COLUMN paused INTEGER NOT NULL DEFAULT 0; "
    "ALTER TABLE populations ADD COLUMN finish_reason TEXT NOT NULL DEFAULT ''; "
    "ALTER TABLE populations ADD COLUMN tokens_epoch INTEGER NOT NULL DEFAULT 0; "
    "INSERT INTO client_tokens (population_id, id, token_hash, created_at, revoked_at) "
    "SELECT id, 0, client_token_hash, created_at, 0 FROM populations",
    // 8 → 9: each population's privacy section and noise secret ('' for both: not private, what
    // every earlier population was). One sqlite3_exec.
    // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
    "ALTER TABLE populations ADD COLUMN privacy TEXT NOT NULL DEFAULT ''; "
    "ALTER TABLE populations ADD COLUMN privacy_secret TEXT NOT NULL DEFAULT ''",
    // 9 → 10: the enrollments so far numbered per client token in enrollment order
    // (device_enrollments, created by the schema above); the index version 9 counted them by
    // goes. One sqlite3_exec.
    // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
    "INSERT INTO device_enrollments (population_id, token_hash, seq, enrolled_at) "
    "SELECT population_id, token_hash, ROW_NUMBER() OVER (PARTITION BY population_id, token_hash "
    "ORDER BY enrolled_at, id), enrolled_at FROM devices; "
    "DROP INDEX IF EXISTS devices_by_token",
};

// Indexes on columns a migration adds: created after the migrations (the schema above runs
// before them, on a database that may not have the column yet).
inline constexpr const char* kSqliteIndexesAfterMigrations[] = {
    // Version 7: the leases a client key holds (count_client_tasks), only those claimed under a
    // bound — a population without one writes no entry.
    "CREATE INDEX IF NOT EXISTS leases_by_client ON leases (client_key, expires_at) "
    "WHERE client_key <> ''",
};

}  // namespace fedleaf::server
