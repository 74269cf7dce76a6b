// The rendered DDL of each record's table is, byte for byte, the text earlier versions of each
// backend ran (pinned here): a database at the current schema version opens without migration.
// (populations.server_optimizer: SQLite 5, PostgreSQL 4; populations.buffered: SQLite 6,
// PostgreSQL 5; PostgreSQL's tasks without the foreign key to rounds: 6.)
#include "server/store/store_tables.h"

#include <catch2/catch.hpp>

namespace fedleaf::server {
namespace {

constexpr const char* kSqlitePopulations = R"sql(CREATE TABLE IF NOT EXISTS populations (
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
         created_at REAL NOT NULL,
         server_optimizer TEXT NOT NULL DEFAULT '',
         buffered TEXT NOT NULL DEFAULT '',
         max_tasks_per_client INTEGER NOT NULL DEFAULT 0,
         paused INTEGER NOT NULL DEFAULT 0,
         finish_reason TEXT NOT NULL DEFAULT '',
         tokens_epoch INTEGER NOT NULL DEFAULT 0,
         privacy TEXT NOT NULL DEFAULT ''))sql";
constexpr const char* kSqliteRounds = R"sql(CREATE TABLE IF NOT EXISTS rounds (
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
         PRIMARY KEY (population_id, number)))sql";
constexpr const char* kSqliteTasks = R"sql(CREATE TABLE IF NOT EXISTS tasks (
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
         FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)))sql";
constexpr const char* kPostgresPopulations = R"sql(CREATE TABLE IF NOT EXISTS populations (
         id TEXT PRIMARY KEY,
         plan_json TEXT NOT NULL,
         client_token_hash TEXT NOT NULL,
         rounds INTEGER NOT NULL,
         clients_per_round INTEGER NOT NULL,
         min_reports INTEGER NOT NULL,
         round_deadline_s DOUBLE PRECISION NOT NULL,
         lease_s DOUBLE PRECISION NOT NULL,
         train_tasks_per_round INTEGER NOT NULL,
         eval_tasks_per_round INTEGER NOT NULL,
         state TEXT NOT NULL CHECK (state IN ('running', 'finished')),
         current_round INTEGER NOT NULL,
         created_at DOUBLE PRECISION NOT NULL,
         server_optimizer TEXT NOT NULL DEFAULT '',
         buffered TEXT NOT NULL DEFAULT '',
         max_tasks_per_client INTEGER NOT NULL DEFAULT 0,
         paused INTEGER NOT NULL DEFAULT 0,
         finish_reason TEXT NOT NULL DEFAULT '',
         tokens_epoch BIGINT NOT NULL DEFAULT 0,
         privacy TEXT NOT NULL DEFAULT ''))sql";
constexpr const char* kPostgresRounds = R"sql(CREATE TABLE IF NOT EXISTS rounds (
         population_id TEXT NOT NULL REFERENCES populations(id),
         number INTEGER NOT NULL,
         status TEXT NOT NULL CHECK (status IN ('open', 'closed')),
         started_at DOUBLE PRECISION NOT NULL,
         deadline DOUBLE PRECISION NOT NULL,
         closed_at DOUBLE PRECISION NOT NULL,
         train_tasks INTEGER NOT NULL,
         eval_tasks INTEGER NOT NULL,
         reports INTEGER NOT NULL,
         examples DOUBLE PRECISION NOT NULL,
         loss_sum DOUBLE PRECISION NOT NULL,
         accuracy_sum DOUBLE PRECISION NOT NULL,
         accuracy_examples DOUBLE PRECISION NOT NULL,
         upload_bytes BIGINT NOT NULL,
         eval_reports INTEGER NOT NULL,
         eval_examples DOUBLE PRECISION NOT NULL,
         eval_sums_json TEXT NOT NULL,
         robust_json TEXT NOT NULL DEFAULT '{}',
         PRIMARY KEY (population_id, number)))sql";
constexpr const char* kPostgresTasks = R"sql(CREATE TABLE IF NOT EXISTS tasks (
         id BIGSERIAL PRIMARY KEY,
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         kind TEXT NOT NULL CHECK (kind IN ('train', 'evaluate')),
         state TEXT NOT NULL CHECK (state IN ('leased', 'done')),
         lease_id BIGINT NOT NULL,
         lease_expires_at DOUBLE PRECISION NOT NULL,
         completed_lease_id BIGINT NOT NULL,
         result_sha256 TEXT NOT NULL,
         result_status INTEGER NOT NULL,
         result_body TEXT NOT NULL))sql";

}  // namespace

TEST_CASE("create_table_sql_renders_the_sqlite_schema_text_of_the_current_version",
          "[store_tables]") {
  CHECK(create_table_sql(kPopulationsTable, Dialect::kSqlite) == kSqlitePopulations);
  CHECK(create_table_sql(kRoundsTable, Dialect::kSqlite) == kSqliteRounds);
  CHECK(create_table_sql(kTasksTable, Dialect::kSqlite) == kSqliteTasks);
}

TEST_CASE("create_table_sql_renders_the_postgres_schema_text_of_the_current_version",
          "[store_tables]") {
  CHECK(create_table_sql(kPopulationsTable, Dialect::kPostgres) == kPostgresPopulations);
  CHECK(create_table_sql(kRoundsTable, Dialect::kPostgres) == kPostgresRounds);
  CHECK(create_table_sql(kTasksTable, Dialect::kPostgres) == kPostgresTasks);
}

TEST_CASE("column_list_names_the_columns_in_declaration_order", "[store_tables]") {
  CHECK(column_list(kTasksTable) ==
        "id, population_id, round, kind, state, lease_id, lease_expires_at, completed_lease_id, "
        "result_sha256, result_status, result_body");
  CHECK(column_list(kPopulationsTable).rfind("id, plan_json, client_token_hash, rounds", 0) == 0);
}

TEST_CASE("insert_sql_names_every_column_with_one_placeholder_each", "[store_tables]") {
  const std::string columns = column_list(kTasksTable);

  CHECK(insert_sql(kTasksTable, Dialect::kSqlite) ==
        "INSERT INTO tasks (" + columns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  CHECK(insert_sql(kTasksTable, Dialect::kPostgres) ==
        "INSERT INTO tasks (" + columns +
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)");
}

}  // namespace fedleaf::server
