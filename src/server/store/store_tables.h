// Column tables: a store table declared once and rendered for both backends — the CREATE TABLE
// of each SQL dialect (a column, constraint or statement one backend lacks says so) and, for the
// tables that hold the store's records (PopulationRecord, RoundRecord, TaskRecord, declared
// here), the column list every SELECT names, the INSERT of a whole record and each column's field
// of the record, so that the binds (values_of) and the row readers (sqlite_rows.h,
// postgres_rows.h) are generated from the one table (Flower's linkstate_tables.py is the
// pattern). The other tables are declared in store_schema.cc, which renders the whole schema.
//
//   exec(create_table_sql(kPopulationsTable, Dialect::kSqlite));
//   "SELECT " + column_list(kTasksTable) + " FROM tasks WHERE id = ?"
//   bind_values(statement(insert_sql(kRoundsTable, Dialect::kSqlite).c_str()), values_of(r));
//
// The rendered DDL is the text earlier versions ran, byte for byte: a database created at the
// current schema version opens without migration (store_tables_test.cc pins it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/store/store.h"

namespace fedleaf::server {

enum class Dialect { kSqlite, kPostgres };

// Which backends have a column, a table or a statement.
enum class Dialects { kBoth, kSqliteOnly, kPostgresOnly };
bool in_dialect(Dialects dialects, Dialect dialect);

// How a column's value travels: the bind and the read of each backend follow it.
enum class ValueKind { kText, kInteger, kReal };

// One column's value of a record, of the column's kind (the other members unused).
struct Value {
  ValueKind kind = ValueKind::kText;
  std::string text;
  std::int64_t integer = 0;
  double real = 0;
};

struct Column {
  const char* name;
  const char* sqlite_type;    // with what only SQLite says (AUTOINCREMENT)
  const char* postgres_type;  // with what only PostgreSQL says (BIGSERIAL)
  const char* rules;          // NOT NULL, CHECK, DEFAULT, REFERENCES: the same in both
  ValueKind kind;
  // The column's field of the table's record (PopulationRecord, RoundRecord or TaskRecord);
  // null in a table without a record (its rows are bound and read by hand).
  Value (*get)(const void* record);
  void (*set)(void* record, const Value& value);
  const char* postgres_rules = nullptr;  // when PostgreSQL's differ from `rules`
  Dialects dialects = Dialects::kBoth;
};

// A statement that follows its table's CREATE TABLE (an index, a sequence), as written.
struct Statement {
  const char* sql;
  Dialects dialects = Dialects::kBoth;
};

struct Table {
  const char* name;
  std::vector<Column> columns;
  std::vector<const char*> constraints;  // table constraints, after the columns
  // Constraints only SQLite's table has, after those (PostgreSQL drops foreign keys the server
  // never relies on: store_schema.cc, PostgreSQL version 6).
  std::vector<const char*> sqlite_only_constraints = {};
  std::vector<Statement> after = {};
  Dialects dialects = Dialects::kBoth;
  bool one_line = false;  // "(a, b)" rather than one column a line: how schema_version was written
};

// Columns by their type in each dialect, NOT NULL unless `rules` says otherwise; the record's
// field is set by the table that holds records (store_tables.cc).
Column ddl_column(const char* name, const char* sqlite_type, const char* postgres_type,
                  const char* rules);
Column text_column(const char* name, const char* rules = "NOT NULL");
Column integer_column(const char* name, const char* rules = "NOT NULL");  // INTEGER in both
Column bigint_column(const char* name, const char* rules = "NOT NULL");   // INTEGER, BIGINT
Column real_column(const char* name, const char* rules = "NOT NULL");     // REAL, DOUBLE PRECISION
Column blob_column(const char* name);                                     // BLOB, BYTEA NOT NULL
// A column only one dialect has.
Column only_in(Dialects dialects, Column column);

extern const Table kPopulationsTable;
extern const Table kRoundsTable;
extern const Table kTasksTable;

// "id, plan_json, …": the table's columns in declaration order.
std::string column_list(const Table& table);
// INSERT INTO the table, every column, one placeholder each ("?" or "$1", "$2", …): the binds
// follow the column order.
std::string insert_sql(const Table& table, Dialect dialect);
// CREATE TABLE IF NOT EXISTS of the table in the dialect (its columns, constraints and rules in
// that dialect).
std::string create_table_sql(const Table& table, Dialect dialect);
// "status = ?, started_at = ?" / "status = $1, …": the columns from `first` on, numbered from 1.
std::string assignments_sql(const Table& table, std::size_t first, Dialect dialect);

// A record's values, one per column in the table's order: what the binds bind.
std::vector<Value> values_of(const PopulationRecord& p);
std::vector<Value> values_of(const RoundRecord& r);
std::vector<Value> values_of(const TaskRecord& t);
// The record of a row's values (one per column, in the table's order): what the readers return.
PopulationRecord population_from(const std::vector<Value>& values);
RoundRecord round_from(const std::vector<Value>& values);
TaskRecord task_from(const std::vector<Value>& values);

}  // namespace fedleaf::server
