// The schema each backend runs, rendered from the one declaration of every table
// (store_schema.h), is byte for byte the text the hand-written schemas ran (SQLite version 10,
// PostgreSQL version 11; pinned here, the record tables' own text in store_tables_test.cc): a
// database created before the tables were declared once opens with no migration and the same
// sqlite_master text.
#include "server/store/store_schema.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "server/store/postgres_schema.h"
#include "server/store/sqlite_schema.h"

namespace fedleaf::server {
namespace {

std::vector<std::string> sqlite_schema_version_10() {
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
      R"sql(CREATE TABLE IF NOT EXISTS optimizer_states (
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         etag TEXT NOT NULL,
         bytes BLOB NOT NULL,
         storage TEXT NOT NULL CHECK (storage IN ('blob', 'file')),
         PRIMARY KEY (population_id, round),
         FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)))sql",
      R"sql(CREATE TABLE IF NOT EXISTS client_tokens (
         population_id TEXT NOT NULL REFERENCES populations(id),
         id INTEGER NOT NULL,
         token_hash TEXT NOT NULL,
         created_at REAL NOT NULL,
         revoked_at REAL NOT NULL DEFAULT 0,
         PRIMARY KEY (population_id, id)))sql",
      R"sql(CREATE INDEX IF NOT EXISTS client_tokens_by_hash
         ON client_tokens (population_id, token_hash))sql",
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
      R"sql(CREATE TABLE IF NOT EXISTS device_enrollments (
         population_id TEXT NOT NULL REFERENCES populations(id),
         token_hash TEXT NOT NULL,
         seq INTEGER NOT NULL,
         enrolled_at REAL NOT NULL,
         PRIMARY KEY (population_id, token_hash, seq)))sql",
  };
}

std::vector<std::string> postgres_schema_version_11() {
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
      R"sql(CREATE TABLE IF NOT EXISTS results (
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         seq BIGINT NOT NULL,
         task_id BIGINT NOT NULL UNIQUE,
         bytes BYTEA NOT NULL,
         PRIMARY KEY (population_id, round, seq)))sql",
      R"sql(CREATE SEQUENCE IF NOT EXISTS result_seq)sql",
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
      R"sql(CREATE TABLE IF NOT EXISTS optimizer_states (
         population_id TEXT NOT NULL,
         round INTEGER NOT NULL,
         etag TEXT NOT NULL,
         bytes BYTEA NOT NULL,
         PRIMARY KEY (population_id, round),
         FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)))sql",
      R"sql(CREATE TABLE IF NOT EXISTS client_tokens (
         population_id TEXT NOT NULL REFERENCES populations(id),
         id INTEGER NOT NULL,
         token_hash TEXT NOT NULL,
         created_at DOUBLE PRECISION NOT NULL,
         revoked_at DOUBLE PRECISION NOT NULL DEFAULT 0,
         PRIMARY KEY (population_id, id)))sql",
      R"sql(CREATE INDEX IF NOT EXISTS client_tokens_by_hash
         ON client_tokens (population_id, token_hash))sql",
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
      R"sql(CREATE TABLE IF NOT EXISTS device_enrollments (
         population_id TEXT NOT NULL REFERENCES populations(id),
         token_hash TEXT NOT NULL,
         seq BIGINT NOT NULL,
         enrolled_at DOUBLE PRECISION NOT NULL,
         PRIMARY KEY (population_id, token_hash, seq)))sql",
  };
}

void check_same_statements(const std::vector<std::string>& rendered,
                           const std::vector<std::string>& pinned) {
  REQUIRE(rendered.size() == pinned.size());
  for (std::size_t i = 0; i < pinned.size(); ++i) {
    INFO("statement " << i);
    CHECK(rendered[i] == pinned[i]);
  }
}

}  // namespace

TEST_CASE("store_schema_renders_the_sqlite_schema_of_version_10_byte_for_byte", "[store_schema]") {
  check_same_statements(store_schema(Dialect::kSqlite), sqlite_schema_version_10());
  check_same_statements(sqlite_schema(), sqlite_schema_version_10());
}

TEST_CASE("store_schema_renders_the_postgres_schema_of_version_11_byte_for_byte",
          "[store_schema]") {
  check_same_statements(store_schema(Dialect::kPostgres), postgres_schema_version_11());
  check_same_statements(postgres_schema(), postgres_schema_version_11());
}

TEST_CASE("create_table_sql_renders_what_only_one_dialect_has_in_that_dialect_only",
          "[store_schema]") {
  Column task = bigint_column("task", "NOT NULL REFERENCES tasks(id)");
  task.postgres_rules = "NOT NULL UNIQUE";
  const Table table{
      "t",
      {text_column("a"), only_in(Dialects::kSqliteOnly, blob_column("b")),
       only_in(Dialects::kPostgresOnly, real_column("c", "NOT NULL DEFAULT 0")), task},
      {"PRIMARY KEY (a)"},
      {"FOREIGN KEY (a) REFERENCES x(a)"}};
  CHECK(create_table_sql(table, Dialect::kSqlite) ==
        "CREATE TABLE IF NOT EXISTS t (\n         a TEXT NOT NULL,\n         b BLOB NOT NULL,"
        "\n         task INTEGER NOT NULL REFERENCES tasks(id),\n         PRIMARY KEY (a),"
        "\n         FOREIGN KEY (a) REFERENCES x(a))");
  CHECK(create_table_sql(table, Dialect::kPostgres) ==
        "CREATE TABLE IF NOT EXISTS t (\n         a TEXT NOT NULL,"
        "\n         c DOUBLE PRECISION NOT NULL DEFAULT 0,"
        "\n         task BIGINT NOT NULL UNIQUE,\n         PRIMARY KEY (a))");
  Table one_line{"v", {integer_column("version"), text_column("note")}};
  one_line.one_line = true;
  CHECK(create_table_sql(one_line, Dialect::kPostgres) ==
        "CREATE TABLE IF NOT EXISTS v (version INTEGER NOT NULL, note TEXT NOT NULL)");
}

TEST_CASE("store_schema_creates_each_declared_table_once_in_its_dialects", "[store_schema]") {
  std::set<std::string> names;
  for (const Table* table : store_tables()) CHECK(names.insert(table->name).second);
  for (const Dialect dialect : {Dialect::kSqlite, Dialect::kPostgres}) {
    std::size_t creates = 0;
    for (const std::string& sql : store_schema(dialect)) {
      creates += sql.rfind("CREATE TABLE", 0) == 0 ? 1 : 0;
    }
    std::size_t tables = 0;
    for (const Table* table : store_tables()) tables += in_dialect(table->dialects, dialect);
    CHECK(creates == tables);
  }
  CHECK(names.count("round_shards") == 1);  // PostgreSQL's only
  CHECK(store_schema(Dialect::kSqlite).size() == 18);
  CHECK(store_schema(Dialect::kPostgres).size() == 20);
}

}  // namespace fedleaf::server
