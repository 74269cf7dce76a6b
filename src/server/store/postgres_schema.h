// The PostgreSQL schema of the task repository (version PostgresStore::kSchemaVersion): every
// table declared once for both backends (store_schema.h), rendered for PostgreSQL, and
// PostgreSQL's migrations. set_up_postgres_schema (postgres_schema_setup.h) runs them when it
// creates or migrates the schema, never on a start that finds the version current.
//
//   for (const std::string& sql : postgres_schema()) pg_exec(conn, sql.c_str());
#pragma once

#include <array>
#include <string>
#include <vector>

#include "server/store/store_schema.h"

namespace fedleaf::server {

inline std::vector<std::string> postgres_schema() { return store_schema(Dialect::kPostgres); }

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
