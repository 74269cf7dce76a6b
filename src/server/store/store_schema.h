// The store's schema, every table declared once (store_tables.h's column tables: the record
// tables there, the others in store_schema.cc) and rendered for each backend: one statement per
// entry, each table's indexes (and PostgreSQL's result sequence) after its CREATE TABLE.
// sqlite_schema.h and postgres_schema.h run it with their migrations.
//
//   for (const std::string& sql : store_schema(Dialect::kSqlite)) exec(sql.c_str());
//
// The text is what the hand-written schemas of SQLite version 10 and PostgreSQL version 11 ran,
// byte for byte (store_schema_test.cc pins it): SQLite keeps a table's CREATE text as written.
#pragma once

#include <string>
#include <vector>

#include "server/store/store_tables.h"

namespace fedleaf::server {

// Every table of the store, in the order its statements run (a table before those referring to
// it).
const std::vector<const Table*>& store_tables();

// The CREATE statements of the dialect's tables and what follows each, in store_tables() order.
std::vector<std::string> store_schema(Dialect dialect);

}  // namespace fedleaf::server
