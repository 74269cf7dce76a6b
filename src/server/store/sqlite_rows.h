#pragma once
// How the SQLite store's rows map to records and back, generated from the column tables
// (store_tables.h): the readers of a row and the binder of a record's values, so that a column
// is named, bound and read in one place. Templates over the statement type (SqliteStatement;
// tests may pass a fake).
//
//   Statement s = statement(("SELECT " + column_list(kRoundsTable) + " FROM rounds").c_str());
//   while (s.step()) rounds.push_back(read_round(s));
//   bind_values(statement(insert_sql(kRoundsTable, Dialect::kSqlite).c_str()), values_of(r), 1);

#include <cstddef>
#include <vector>

#include "server/store/store.h"
#include "server/store/store_tables.h"

namespace fedleaf::server {

// The row's values of the table's columns, each read as its column's kind.
template <class Stmt>
std::vector<Value> read_values(const Stmt& s, const Table& table) {
  std::vector<Value> out(table.columns.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int col = static_cast<int>(i);
    out[i].kind = table.columns[i].kind;
    switch (out[i].kind) {
      case ValueKind::kText:
        out[i].text = s.text(col);
        break;
      case ValueKind::kInteger:
        out[i].integer = s.int64(col);
        break;
      case ValueKind::kReal:
        out[i].real = s.real(col);
        break;
    }
  }
  return out;
}

// Binds values[skip..] at positions first, first + 1, …; returns the next position.
template <class Stmt>
int bind_values(Stmt& s, const std::vector<Value>& values, int first, std::size_t skip = 0) {
  for (std::size_t i = skip; i < values.size(); ++i, ++first) {
    const Value& v = values[i];
    switch (v.kind) {
      case ValueKind::kText:
        s.bind(first, v.text);
        break;
      case ValueKind::kInteger:
        s.bind(first, v.integer);
        break;
      case ValueKind::kReal:
        s.bind(first, v.real);
        break;
    }
  }
  return first;
}

template <class Stmt>
PopulationRecord read_population(const Stmt& s) {
  return population_from(read_values(s, kPopulationsTable));
}
template <class Stmt>
RoundRecord read_round(const Stmt& s) {
  return round_from(read_values(s, kRoundsTable));
}
template <class Stmt>
TaskRecord read_task(const Stmt& s) {
  return task_from(read_values(s, kTasksTable));
}

}  // namespace fedleaf::server
