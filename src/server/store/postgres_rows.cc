#include "server/store/postgres_rows.h"

#include "server/store/store_rules.h"

namespace fedleaf::server {

std::vector<Value> read_values(const PgRows& s, int i, const Table& table) {
  std::vector<Value> out(table.columns.size());
  for (std::size_t c = 0; c < out.size(); ++c) {
    const int col = static_cast<int>(c);
    out[c].kind = table.columns[c].kind;
    switch (out[c].kind) {
      case ValueKind::kText:
        out[c].text = s.text(i, col);
        break;
      case ValueKind::kInteger:
        out[c].integer = s.int64(i, col);
        break;
      case ValueKind::kReal:
        out[c].real = s.real(i, col);
        break;
    }
  }
  return out;
}

PgParams& add_values(PgParams& p, const std::vector<Value>& values, std::size_t skip) {
  for (std::size_t c = skip; c < values.size(); ++c) {
    const Value& v = values[c];
    switch (v.kind) {
      case ValueKind::kText:
        p.text(v.text);
        break;
      case ValueKind::kInteger:
        p.integer(v.integer);
        break;
      case ValueKind::kReal:
        p.real(v.real);
        break;
    }
  }
  return p;
}

PopulationRecord read_population(const PgRows& s, int i) {
  return population_from(read_values(s, i, kPopulationsTable));
}

RoundRecord read_round(const PgRows& s, int i) {
  return round_from(read_values(s, i, kRoundsTable));
}

TaskRecord read_task(const PgRows& s, int i) { return task_from(read_values(s, i, kTasksTable)); }

std::string select_from(const std::string& columns, const char* rest) {
  return std::string("SELECT ") + columns + " FROM " + rest;
}

RoundRecord read_shard(const PgRows& s, int i, int first) {
  RoundRecord r;
  r.reports = s.int32(i, first);
  r.examples = s.real(i, first + 1);
  r.loss_sum = s.real(i, first + 2);
  r.accuracy_sum = s.real(i, first + 3);
  r.accuracy_examples = s.real(i, first + 4);
  r.upload_bytes = s.int64(i, first + 5);
  r.eval_reports = s.int32(i, first + 6);
  r.eval_examples = s.real(i, first + 7);
  r.eval_sums_json = s.text(i, first + 8);
  return r;
}

std::vector<RoundRecord> read_rounds_with_shards(const PgRows& rows) {
  std::vector<RoundRecord> out;
  static const int first_shard_column = static_cast<int>(kRoundsTable.columns.size());
  for (int i = 0; i < rows.size(); ++i) {
    RoundRecord round = read_round(rows, i);
    if (out.empty() || out.back().number != round.number) out.push_back(std::move(round));
    if (!rows.is_null(i, first_shard_column)) {
      add_round_counts(out.back(), read_shard(rows, i, first_shard_column));
    }
  }
  return out;
}

std::string rounds_with_shards(const char* where) {
  std::string round_columns;
  for (const Column& column : kRoundsTable.columns) {
    round_columns += std::string("r.") + column.name + ", ";
  }
  return "SELECT " + round_columns +
         "s.reports, s.examples, s.loss_sum, s.accuracy_sum, s.accuracy_examples, "
         "s.upload_bytes, s.eval_reports, s.eval_examples, s.eval_sums_json FROM rounds r LEFT "
         "JOIN round_shards s ON s.population_id = r.population_id AND s.round = r.number WHERE " +
         where + " ORDER BY r.number, s.shard";
}

}  // namespace fedleaf::server
