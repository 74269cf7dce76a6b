#include "server/store/postgres_rows.h"

#include "server/store/store_rules.h"

namespace fedleaf::server {

std::vector<Value> read_values(const PgRows& s, int i, const Table& table, int first) {
  std::vector<Value> out(table.columns.size());
  for (std::size_t c = 0; c < out.size(); ++c) {
    const int col = first + static_cast<int>(c);
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

TaskRecord read_task(const PgRows& s, int i, int first) {
  return task_from(read_values(s, i, kTasksTable, first));
}

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

std::string qualified_columns(const Table& table, const char* alias) {
  std::string out;
  for (const Column& column : table.columns) {
    if (!out.empty()) out += ", ";
    out += std::string(alias) + "." + column.name;
  }
  return out;
}

namespace {

const char* const kShardColumns =
    "s.reports, s.examples, s.loss_sum, s.accuracy_sum, s.accuracy_examples, s.upload_bytes, "
    "s.eval_reports, s.eval_examples, s.eval_sums_json";

}  // namespace

std::string rounds_with_shards(const char* where, const std::string& more_columns,
                               const char* more_from) {
  return "SELECT " + qualified_columns(kRoundsTable, "r") + ", " + kShardColumns + more_columns +
         " FROM " + more_from +
         "rounds r LEFT JOIN round_shards s ON s.population_id = r.population_id AND "
         "s.round = r.number WHERE " +
         where + " ORDER BY r.number, s.shard";
}

std::string progress_with_shards() {
  return "SELECT " + qualified_columns(kRoundsTable, "r") + ", " + kShardColumns +
         ", p.state, p.current_round, p.paused, p.tokens_epoch FROM populations p LEFT JOIN rounds "
         "r ON r.population_id = "
         "p.id AND r.number = $2 LEFT JOIN round_shards s ON s.population_id = r.population_id "
         "AND s.round = r.number WHERE p.id = $1 ORDER BY s.shard";
}

std::string task_with_leases() {
  return "SELECT " + qualified_columns(kTasksTable, "t") +
         ", l.id, l.task_id, l.token_hash, l.expires_at FROM tasks t LEFT JOIN leases l ON "
         "l.task_id = $1 WHERE t.id = $1 ORDER BY l.id";
}

}  // namespace fedleaf::server
