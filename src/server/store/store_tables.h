// The tables that hold the store's records (PopulationRecord, RoundRecord, TaskRecord), each
// declared once as a column table and rendered for both backends: the CREATE TABLE of each SQL
// dialect, the column list every SELECT names and the INSERT of a whole record, in the one order
// the row readers (sqlite_rows.h, postgres_rows.h) read (Flower's linkstate_tables.py is the
// pattern).
//
//   exec(create_table_sql(kPopulationsTable, Dialect::kSqlite));
//   "SELECT " + column_list(kTasksTable) + " FROM tasks WHERE id = ?"
//   statement(insert_sql(kRoundsTable, Dialect::kSqlite).c_str()).bind(1, r.population_id)…
//
// The rendered DDL is the text earlier versions ran, byte for byte: a database created at the
// current schema version opens without migration (store_tables_test.cc pins it).
#pragma once

#include <string>
#include <vector>

namespace fedleaf::server {

enum class Dialect { kSqlite, kPostgres };

struct Column {
  const char* name;
  const char* sqlite_type;    // with what only SQLite says (AUTOINCREMENT)
  const char* postgres_type;  // with what only PostgreSQL says (BIGSERIAL)
  const char* rules;          // NOT NULL, CHECK, DEFAULT, REFERENCES: the same in both
};

struct Table {
  const char* name;
  std::vector<Column> columns;
  std::vector<const char*> constraints;  // table constraints, after the columns
};

extern const Table kPopulationsTable;
extern const Table kRoundsTable;
extern const Table kTasksTable;

// "id, plan_json, …": the table's columns in declaration order.
std::string column_list(const Table& table);
// INSERT INTO the table, every column, one placeholder each ("?" or "$1", "$2", …): the binds
// follow the column order.
std::string insert_sql(const Table& table, Dialect dialect);
// CREATE TABLE IF NOT EXISTS of the table in the dialect.
std::string create_table_sql(const Table& table, Dialect dialect);

}  // namespace fedleaf::server
