// The PostgreSQL schema of the task repository (version PostgresStore::kSchemaVersion): one
// statement per entry, indexes next to their tables, the tables of records rendered from their
// column tables (store_tables.h), the same tables and rules as SQLite's
// (sqlite_schema.h). set_up_postgres_schema (postgres_schema_setup.h) runs them when it creates
// or migrates the schema, never on a start that finds the version current.
//
//   for (const std::string& sql : postgres_schema()) pg_exec(conn, sql.c_str());
#pragma once

#include <array>
#include <string>
#include <vector>

#include "server/store/store_tables.h"

namespace fedleaf::server {

inline std::vector<std::string> postgres_schema() {
  return {
      R"sql(CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL))sql",
      create_table_sql(kPopulationsTable, Dialect::kPostgres),
      create_table_sql(kRoundsTable, Dialect::kPostgres),
      R"sql(CREATE TABLE IF NOT EXISTS models (
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         etag TEXT NOT NULL,
         bytes BYTEA NOT NULL,
         PRIMARY KEY (population_id, round),
         FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)))sql",
      create_table_sql(kTasksTable, Dialect::kPostgres),
      // Version 6: no foreign keys on the rows every claim and report writes (tasks, leases,
      // results; SQLite keeps them: kTasksTable's sqlite_only_constraints). The server writes
      // them only under the row they would point to (a task under its round's lock, a lease and a
      // result under their task's), deletes no task, round or population, and its own reads are
      // the checks; each key was a lookup and a KEY SHARE lock (on the round row: a multixact
      // among servers) per row written.
      // Version 6: the claim's order (lease_expires_at, id) is the index's, so a claim reads one
      // entry instead of sorting every leasable task of the round (tasks_by_expiry, up to 5).
      R"sql(CREATE INDEX IF NOT EXISTS tasks_to_lease
         ON tasks (population_id, round, kind, state, lease_expires_at, id))sql",
      R"sql(CREATE INDEX IF NOT EXISTS tasks_by_state ON tasks (state, lease_expires_at))sql",
      R"sql(CREATE TABLE IF NOT EXISTS leases (
         id BIGSERIAL PRIMARY KEY,
         task_id BIGINT NOT NULL,
         token_hash TEXT NOT NULL,
         expires_at DOUBLE PRECISION NOT NULL,
         refused_sha256 TEXT NOT NULL DEFAULT '',
         client_key TEXT NOT NULL DEFAULT ''))sql",
      R"sql(CREATE INDEX IF NOT EXISTS leases_by_task ON leases (task_id))sql",
      // One result per task and one per seq: a second acceptance is a unique violation even if
      // the locks were bypassed.
      R"sql(CREATE TABLE IF NOT EXISTS results (
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         seq BIGINT NOT NULL,
         task_id BIGINT NOT NULL UNIQUE,
         bytes BYTEA NOT NULL,
         PRIMARY KEY (population_id, round, seq)))sql",
      // Result seqs come from one sequence (no round row to count on): increasing in the order
      // the results were accepted, so a round's results read in seq order are folded as one
      // server would have folded them.
      R"sql(CREATE SEQUENCE IF NOT EXISTS result_seq)sql",
      // A round's report counters while it is open, one row per server connection (shard = its
      // backend pid): an accept adds to its own row only, so servers never wait for one another's
      // commits; a round's counters are its row plus its shards (close_round folds them in). A
      // closer locks every shard row first: that waits for the accepts in flight, and an accept
      // locks its shard row before it reads whether the round is open.
      // Version 7: no foreign key to rounds (a shard row is created under its round row's lock,
      // and deleted by the close that holds it; no round is deleted). The key's check ran on
      // every increment but a batch's first (the row version its own transaction wrote), each a
      // KEY SHARE lock on the round row: a multixact among the servers' batches.
      R"sql(CREATE TABLE IF NOT EXISTS round_shards (
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         shard BIGINT NOT NULL,
         reports INTEGER NOT NULL,
         examples DOUBLE PRECISION NOT NULL,
         loss_sum DOUBLE PRECISION NOT NULL,
         accuracy_sum DOUBLE PRECISION NOT NULL,
         accuracy_examples DOUBLE PRECISION NOT NULL,
         upload_bytes BIGINT NOT NULL,
         eval_reports INTEGER NOT NULL,
         eval_examples DOUBLE PRECISION NOT NULL,
         eval_sums_json TEXT NOT NULL,
         PRIMARY KEY (population_id, round, shard)))sql",
      R"sql(CREATE TABLE IF NOT EXISTS checkpoints (
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         seq BIGINT NOT NULL,
         bytes BYTEA NOT NULL,
         PRIMARY KEY (population_id, round),
         FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)))sql",
      R"sql(CREATE TABLE IF NOT EXISTS rejections (
         population_id TEXT NOT NULL REFERENCES populations(id),
         reason TEXT NOT NULL,
         count BIGINT NOT NULL,
         PRIMARY KEY (population_id, reason)))sql",
      // Version 4: the server optimizer's state with the latest model (OptimizerStateRecord).
      R"sql(CREATE TABLE IF NOT EXISTS optimizer_states (
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         etag TEXT NOT NULL,
         bytes BYTEA NOT NULL,
         PRIMARY KEY (population_id, round),
         FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)))sql",
      // Version 9: each population's client tokens (ClientTokenRecord), by their hash.
      R"sql(CREATE TABLE IF NOT EXISTS client_tokens (
         population_id TEXT NOT NULL REFERENCES populations(id),
         id INTEGER NOT NULL,
         token_hash TEXT NOT NULL,
         created_at DOUBLE PRECISION NOT NULL,
         revoked_at DOUBLE PRECISION NOT NULL DEFAULT 0,
         PRIMARY KEY (population_id, id)))sql",
      R"sql(CREATE INDEX IF NOT EXISTS client_tokens_by_hash
         ON client_tokens (population_id, token_hash))sql",
      // Version 10: a private population's devices (DeviceRecord), found by their credential's
      // hash on every claim (devices_by_credential: a million devices cost a claim one index
      // probe).
      R"sql(CREATE TABLE IF NOT EXISTS devices (
         population_id TEXT NOT NULL REFERENCES populations(id),
         id TEXT NOT NULL,
         credential_hash TEXT NOT NULL,
         token_hash TEXT NOT NULL,
         enrolled_at DOUBLE PRECISION NOT NULL,
         revoked_at DOUBLE PRECISION NOT NULL DEFAULT 0,
         participations INTEGER NOT NULL DEFAULT 0,
         last_round INTEGER NOT NULL DEFAULT -1,
         PRIMARY KEY (population_id, id)))sql",
      R"sql(CREATE UNIQUE INDEX IF NOT EXISTS devices_by_credential
         ON devices (population_id, credential_hash))sql",
      // Version 11: each client token's enrollments in a population, numbered 1, 2, … in order
      // (enroll_device): the hourly limit reads the one enrollment `limit` back, an index probe
      // however many devices the token enrolled (version 10 counted the hour's rows).
      R"sql(CREATE TABLE IF NOT EXISTS device_enrollments (
         population_id TEXT NOT NULL REFERENCES populations(id),
         token_hash TEXT NOT NULL,
         seq BIGINT NOT NULL,
         enrolled_at DOUBLE PRECISION NOT NULL,
         PRIMARY KEY (population_id, token_hash, seq)))sql",
  };
}

// Migrations: kPostgresMigrations[v - 1] turns a version v database into version v + 1, in the
// same transaction as the version bump (the new tables exist already: the schema above runs
// first).
inline constexpr std::array<const char*, 10> kPostgresMigrations{
    // 1 → 2: seqs from result_seq, after those of the results stored by version 1.
    "SELECT setval('result_seq', coalesce((SELECT max(seq) FROM results), 0) + 1, false)",
    // 2 → 3: the bytes of each lease's last refused upload counted (add_rejection). ACCESS
    // EXCLUSIVE on leases, briefly (a constant default rewrites no row).
    "ALTER TABLE leases ADD COLUMN IF NOT EXISTS refused_sha256 TEXT NOT NULL DEFAULT ''",
    // 3 → 4: each population's server optimizer ('' is FedAvg, what every earlier population
    // ran); optimizer_states is created by the schema above. A constant default rewrites no row.
    "ALTER TABLE populations ADD COLUMN IF NOT EXISTS server_optimizer TEXT NOT NULL DEFAULT ''",
    // 4 → 5: each population's buffered mode ('' is synchronous rounds, what every earlier
    // population ran). A constant default rewrites no row.
    "ALTER TABLE populations ADD COLUMN IF NOT EXISTS buffered TEXT NOT NULL DEFAULT ''",
    // 5 → 6: tasks_to_lease (created by the schema above) replaces tasks_by_expiry, its prefix;
    // the foreign keys of tasks, leases and results go. One statement.
    "DO $$ BEGIN DROP INDEX IF EXISTS tasks_by_expiry; ALTER TABLE tasks DROP CONSTRAINT IF "
    "EXISTS tasks_population_id_round_fkey; ALTER TABLE leases DROP CONSTRAINT IF "
    "EXISTS leases_task_id_fkey; ALTER TABLE results DROP CONSTRAINT IF EXISTS "
    "results_task_id_fkey, DROP CONSTRAINT IF EXISTS results_population_id_round_fkey; END $$",
    // 6 → 7: round_shards' foreign key to rounds goes.
    "ALTER TABLE round_shards DROP CONSTRAINT IF EXISTS round_shards_population_id_round_fkey",
    // 7 → 8: each population's max_tasks_per_client (0: no bound, what every earlier population
    // ran) and the client key a lease was claimed under ('': none). Constant defaults rewrite no
    // row; ACCESS EXCLUSIVE on both tables, briefly. One statement.
    "DO $$ BEGIN ALTER TABLE populations ADD COLUMN IF NOT EXISTS max_tasks_per_client INTEGER "
    "NOT NULL DEFAULT 0; ALTER TABLE leases ADD COLUMN IF NOT EXISTS client_key TEXT NOT NULL "
    "DEFAULT ''; END $$",
    // 8 → 9: each population's operator pause (0: running, what every earlier population was),
    // why an operator finished it ('': it ran to its end) and its tokens' epoch; its client token
    // becomes token 0 of client_tokens (created by the schema above). Constant defaults rewrite no
    // row. One statement.
    "DO $$ BEGIN ALTER TABLE populations ADD COLUMN IF NOT EXISTS paused INTEGER NOT NULL DEFAULT "
    "0; ALTER TABLE populations ADD COLUMN IF NOT EXISTS finish_reason TEXT NOT NULL DEFAULT ''; "
    "ALTER TABLE populations ADD COLUMN IF NOT EXISTS tokens_epoch BIGINT NOT NULL DEFAULT 0; "
    "INSERT INTO client_tokens (population_id, id, token_hash, created_at, revoked_at) SELECT id, "
    "0, client_token_hash, created_at, 0 FROM populations ON CONFLICT DO NOTHING; END $$",
    // 9 → 10: each population's privacy section and noise secret ('' for both: not private, what
    // every earlier population was). Constant defaults rewrite no row. One statement.
    "DO $$ BEGIN ALTER TABLE populations ADD COLUMN IF NOT EXISTS privacy TEXT NOT NULL DEFAULT "
    "''; ALTER TABLE populations ADD COLUMN IF NOT EXISTS privacy_secret TEXT NOT NULL DEFAULT "
    "''; END $$",
    // 10 → 11: the enrollments so far numbered per client token in enrollment order
    // (device_enrollments, created by the schema above); the index version 10 counted them by
    // goes. One statement.
    "DO $$ BEGIN INSERT INTO device_enrollments (population_id, token_hash, seq, enrolled_at) "
    "SELECT population_id, token_hash, ROW_NUMBER() OVER (PARTITION BY population_id, "
    "token_hash ORDER BY enrolled_at, id), enrolled_at FROM devices ON CONFLICT DO NOTHING; "
    "DROP INDEX IF EXISTS devices_by_token; END $$",
};

// Indexes on columns a migration adds: created after the migrations (the schema above runs
// before them, on a database that may not have the column yet).
inline constexpr std::array<const char*, 1> kPostgresIndexesAfterMigrations{
    // Version 8: the leases a client key holds (count_client_tasks), only those claimed under a
    // bound — a population without one writes no entry.
    "CREATE INDEX IF NOT EXISTS leases_by_client ON leases (client_key, expires_at) "
    "WHERE client_key <> ''",
};

}  // namespace fedleaf::server
