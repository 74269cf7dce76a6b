// The SQLite schema of the task repository (version SqliteStore::kSchemaVersion): one statement
// per constant, indexes next to their tables. SqliteStore runs them on open.
//
//   for (const char* sql : kSqliteSchema) exec(sql);
#pragma once

namespace fedleaf::server {

inline constexpr const char* kSqliteSchema[] = {
    R"sql(CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL))sql",
    R"sql(CREATE TABLE IF NOT EXISTS populations (
         id TEXT PRIMARY KEY,
         plan_json TEXT NOT NULL,
         client_token_hash TEXT NOT NULL,
         rounds INTEGER NOT NULL,
         clients_per_round INTEGER NOT NULL,
         min_reports INTEGER NOT NULL,
         round_deadline_s REAL NOT NULL,
         lease_s REAL NOT NULL,
         train_tasks_per_round INTEGER NOT NULL,
         eval_tasks_per_round INTEGER NOT NULL,
         state TEXT NOT NULL CHECK (state IN ('running', 'finished')),
         current_round INTEGER NOT NULL,
         created_at REAL NOT NULL))sql",
    R"sql(CREATE TABLE IF NOT EXISTS rounds (
         population_id TEXT NOT NULL REFERENCES populations(id),
         number INTEGER NOT NULL,
         status TEXT NOT NULL CHECK (status IN ('open', 'closed')),
         started_at REAL NOT NULL,
         deadline REAL NOT NULL,
         closed_at REAL NOT NULL,
         train_tasks INTEGER NOT NULL,
         eval_tasks INTEGER NOT NULL,
         reports INTEGER NOT NULL,
         examples REAL NOT NULL,
         loss_sum REAL NOT NULL,
         accuracy_sum REAL NOT NULL,
         accuracy_examples REAL NOT NULL,
         upload_bytes INTEGER NOT NULL,
         eval_reports INTEGER NOT NULL,
         eval_examples REAL NOT NULL,
         eval_sums_json TEXT NOT NULL,
         robust_json TEXT NOT NULL DEFAULT '{}',
         PRIMARY KEY (population_id, number)))sql",
    R"sql(CREATE TABLE IF NOT EXISTS models (
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         etag TEXT NOT NULL,
         bytes BLOB NOT NULL,
         storage TEXT NOT NULL DEFAULT 'blob' CHECK (storage IN ('blob', 'file')),
         PRIMARY KEY (population_id, round),
         FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)))sql",
    R"sql(CREATE TABLE IF NOT EXISTS tasks (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         kind TEXT NOT NULL CHECK (kind IN ('train', 'evaluate')),
         state TEXT NOT NULL CHECK (state IN ('leased', 'done')),
         lease_id INTEGER NOT NULL,
         lease_expires_at REAL NOT NULL,
         completed_lease_id INTEGER NOT NULL,
         result_sha256 TEXT NOT NULL,
         result_status INTEGER NOT NULL,
         result_body TEXT NOT NULL,
         FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)))sql",
    R"sql(CREATE INDEX IF NOT EXISTS tasks_by_expiry
         ON tasks (population_id, round, kind, state, lease_expires_at))sql",
    R"sql(CREATE INDEX IF NOT EXISTS tasks_by_state ON tasks (state, lease_expires_at))sql",
    R"sql(CREATE TABLE IF NOT EXISTS leases (
         id INTEGER PRIMARY KEY AUTOINCREMENT,
         task_id INTEGER NOT NULL REFERENCES tasks(id),
         token_hash TEXT NOT NULL,
         expires_at REAL NOT NULL,
         refused_sha256 TEXT NOT NULL DEFAULT ''))sql",
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
};

// Migrations: kSqliteMigrations[v - 1] turns a version v database into version v + 1, in the
// same transaction as the version bump (a database is never left half migrated).
inline constexpr const char* kSqliteMigrations[] = {
    // 1 → 2: robust aggregation counts per round (clipped, capped, withheld), as JSON.
    "ALTER TABLE rounds ADD COLUMN robust_json TEXT NOT NULL DEFAULT '{}'",
    // 2 → 3: where a model's bytes are — 'blob' in `bytes`, 'file' in the model directory
    // (`bytes` empty). Models stored before stay blobs and are read as before.
    "ALTER TABLE models ADD COLUMN storage TEXT NOT NULL DEFAULT 'blob' "
    "CHECK (storage IN ('blob', 'file'))",
    // 3 → 4: the bytes of each lease's last refused upload counted (add_rejection).
    "ALTER TABLE leases ADD COLUMN refused_sha256 TEXT NOT NULL DEFAULT ''",
};

}  // namespace fedleaf::server
