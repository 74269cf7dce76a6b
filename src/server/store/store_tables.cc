#include "server/store/store_tables.h"

namespace fedleaf::server {

namespace {

constexpr const char* kRoundFk =
    "FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)";

Column ddl(const char* name, const char* sqlite_type, const char* postgres_type,
           const char* rules) {
  return ddl_column(name, sqlite_type, postgres_type, rules);
}
Column text(const char* name, const char* rules = "NOT NULL") { return text_column(name, rules); }
Column integer(const char* name) { return integer_column(name); }
Column bigint(const char* name) { return bigint_column(name); }
Column real(const char* name) { return real_column(name); }

// A field's value and back, by the field's type (the enums travel as their names).
Value text_value(std::string v) {
  Value out;
  out.text = std::move(v);
  return out;
}
Value value(const std::string& v) { return text_value(v); }
Value value(std::int64_t v) {
  Value out;
  out.kind = ValueKind::kInteger;
  out.integer = v;
  return out;
}
Value value(int v) { return value(static_cast<std::int64_t>(v)); }
Value value(double v) {
  Value out;
  out.kind = ValueKind::kReal;
  out.real = v;
  return out;
}
Value value(bool v) { return value(static_cast<std::int64_t>(v ? 1 : 0)); }
Value value(RunState v) { return text_value(to_string(v)); }
Value value(RoundStatus v) { return text_value(to_string(v)); }
Value value(TaskKind v) { return text_value(to_string(v)); }
Value value(TaskState v) { return text_value(to_string(v)); }
void assign(std::string& field, const Value& v) { field = v.text; }
void assign(std::int64_t& field, const Value& v) { field = v.integer; }
void assign(int& field, const Value& v) { field = static_cast<int>(v.integer); }
void assign(double& field, const Value& v) { field = v.real; }
void assign(bool& field, const Value& v) { field = v.integer != 0; }
void assign(RunState& field, const Value& v) { field = parse_run_state(v.text); }
void assign(RoundStatus& field, const Value& v) { field = parse_round_status(v.text); }
void assign(TaskKind& field, const Value& v) { field = parse_task_kind(v.text); }
void assign(TaskState& field, const Value& v) { field = parse_task_state(v.text); }

template <class>
struct MemberOf;
template <class R, class T>
struct MemberOf<T R::*> {
  using Record = R;
  using Type = T;
};

// The column `c` as the field `Member` of its record.
template <auto Member>
Column field(Column c) {
  using R = typename MemberOf<decltype(Member)>::Record;
  c.kind = value(typename MemberOf<decltype(Member)>::Type{}).kind;
  c.get = [](const void* r) { return value(static_cast<const R*>(r)->*Member); };
  c.set = [](void* r, const Value& v) { assign(static_cast<R*>(r)->*Member, v); };
  return c;
}
// The column `c` as the setting `Member` of a PopulationRecord.
template <auto Member>
Column setting(Column c) {
  c.kind = value(typename MemberOf<decltype(Member)>::Type{}).kind;
  c.get = [](const void* r) {
    return value(static_cast<const PopulationRecord*>(r)->settings.*Member);
  };
  c.set = [](void* r, const Value& v) {
    assign(static_cast<PopulationRecord*>(r)->settings.*Member, v);
  };
  return c;
}

std::vector<Value> values(const Table& table, const void* record) {
  std::vector<Value> out;
  out.reserve(table.columns.size());
  for (const Column& column : table.columns) out.push_back(column.get(record));
  return out;
}

template <class R>
R record(const Table& table, const std::vector<Value>& values) {
  R out;
  for (std::size_t i = 0; i < table.columns.size() && i < values.size(); ++i) {
    table.columns[i].set(&out, values[i]);
  }
  return out;
}

using P = PopulationRecord;
using Ro = RoundRecord;
using T = TaskRecord;
using S = PopulationSettings;

}  // namespace

const Table kPopulationsTable{
    "populations",
    {field<&P::id>(text("id", "PRIMARY KEY")),
     field<&P::plan_json>(text("plan_json")),
     field<&P::client_token_hash>(text("client_token_hash")),
     setting<&S::rounds>(integer("rounds")),
     setting<&S::clients_per_round>(integer("clients_per_round")),
     setting<&S::min_reports>(integer("min_reports")),
     setting<&S::round_deadline_s>(real("round_deadline_s")),
     setting<&S::lease_s>(real("lease_s")),
     setting<&S::train_tasks_per_round>(integer("train_tasks_per_round")),
     setting<&S::eval_tasks_per_round>(integer("eval_tasks_per_round")),
     field<&P::state>(text("state", "NOT NULL CHECK (state IN ('running', 'finished'))")),
     field<&P::current_round>(integer("current_round")),
     field<&P::created_at>(real("created_at")),
     setting<&S::server_optimizer_json>(text("server_optimizer", "NOT NULL DEFAULT ''")),
     setting<&S::buffered_json>(text("buffered", "NOT NULL DEFAULT ''")),
     setting<&S::max_tasks_per_client>(
         ddl("max_tasks_per_client", "INTEGER", "INTEGER", "NOT NULL DEFAULT 0")),
     field<&P::paused>(ddl("paused", "INTEGER", "INTEGER", "NOT NULL DEFAULT 0")),
     field<&P::finish_reason>(text("finish_reason", "NOT NULL DEFAULT ''")),
     field<&P::tokens_epoch>(ddl("tokens_epoch", "INTEGER", "BIGINT", "NOT NULL DEFAULT 0")),
     setting<&S::privacy_json>(text("privacy", "NOT NULL DEFAULT ''")),
     field<&P::privacy_secret>(text("privacy_secret", "NOT NULL DEFAULT ''"))},
    {}};

const Table kRoundsTable{
    "rounds",
    {field<&Ro::population_id>(text("population_id", "NOT NULL REFERENCES populations(id)")),
     field<&Ro::number>(integer("number")),
     field<&Ro::status>(text("status", "NOT NULL CHECK (status IN ('open', 'closed'))")),
     field<&Ro::started_at>(real("started_at")), field<&Ro::deadline>(real("deadline")),
     field<&Ro::closed_at>(real("closed_at")), field<&Ro::train_tasks>(integer("train_tasks")),
     field<&Ro::eval_tasks>(integer("eval_tasks")), field<&Ro::reports>(integer("reports")),
     field<&Ro::examples>(real("examples")), field<&Ro::loss_sum>(real("loss_sum")),
     field<&Ro::accuracy_sum>(real("accuracy_sum")),
     field<&Ro::accuracy_examples>(real("accuracy_examples")),
     field<&Ro::upload_bytes>(bigint("upload_bytes")),
     field<&Ro::eval_reports>(integer("eval_reports")),
     field<&Ro::eval_examples>(real("eval_examples")),
     field<&Ro::eval_sums_json>(text("eval_sums_json")),
     field<&Ro::robust_json>(text("robust_json", "NOT NULL DEFAULT '{}'"))},
    {"PRIMARY KEY (population_id, number)"}};

const Table kTasksTable{
    "tasks",
    {field<&T::id>(ddl("id", "INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY", "")),
     field<&T::population_id>(text("population_id")), field<&T::round>(integer("round")),
     field<&T::kind>(text("kind", "NOT NULL CHECK (kind IN ('train', 'evaluate'))")),
     field<&T::state>(text("state", "NOT NULL CHECK (state IN ('leased', 'done'))")),
     field<&T::lease_id>(bigint("lease_id")), field<&T::lease_expires_at>(real("lease_expires_at")),
     field<&T::completed_lease_id>(bigint("completed_lease_id")),
     field<&T::result_sha256>(text("result_sha256")),
     field<&T::result_status>(integer("result_status")),
     field<&T::result_body>(text("result_body"))},
    {},
    {kRoundFk},
    // PostgreSQL version 6: the claim's order (lease_expires_at, id) is the index's, so a claim
    // reads one entry instead of sorting every leasable task of the round (tasks_to_lease
    // replaces tasks_by_expiry, its prefix).
    {{R"sql(CREATE INDEX IF NOT EXISTS tasks_by_expiry
         ON tasks (population_id, round, kind, state, lease_expires_at))sql",
      Dialects::kSqliteOnly},
     {R"sql(CREATE INDEX IF NOT EXISTS tasks_to_lease
         ON tasks (population_id, round, kind, state, lease_expires_at, id))sql",
      Dialects::kPostgresOnly},
     {"CREATE INDEX IF NOT EXISTS tasks_by_state ON tasks (state, lease_expires_at)"}}};

bool in_dialect(Dialects dialects, Dialect dialect) {
  return dialects == Dialects::kBoth ||
         (dialects == Dialects::kSqliteOnly) == (dialect == Dialect::kSqlite);
}

Column ddl_column(const char* name, const char* sqlite_type, const char* postgres_type,
                  const char* rules) {
  return {name, sqlite_type, postgres_type, rules, ValueKind::kText, nullptr, nullptr};
}
Column text_column(const char* name, const char* rules) {
  return ddl_column(name, "TEXT", "TEXT", rules);
}
Column integer_column(const char* name, const char* rules) {
  return ddl_column(name, "INTEGER", "INTEGER", rules);
}
Column bigint_column(const char* name, const char* rules) {
  return ddl_column(name, "INTEGER", "BIGINT", rules);
}
Column real_column(const char* name, const char* rules) {
  return ddl_column(name, "REAL", "DOUBLE PRECISION", rules);
}
Column blob_column(const char* name) { return ddl_column(name, "BLOB", "BYTEA", "NOT NULL"); }
Column only_in(Dialects dialects, Column column) {
  column.dialects = dialects;
  return column;
}

std::vector<Value> values_of(const PopulationRecord& p) { return values(kPopulationsTable, &p); }
std::vector<Value> values_of(const RoundRecord& r) { return values(kRoundsTable, &r); }
std::vector<Value> values_of(const TaskRecord& t) { return values(kTasksTable, &t); }
PopulationRecord population_from(const std::vector<Value>& values) {
  return record<PopulationRecord>(kPopulationsTable, values);
}
RoundRecord round_from(const std::vector<Value>& values) {
  return record<RoundRecord>(kRoundsTable, values);
}
TaskRecord task_from(const std::vector<Value>& values) {
  return record<TaskRecord>(kTasksTable, values);
}

std::string assignments_sql(const Table& table, std::size_t first, Dialect dialect) {
  std::string out;
  for (std::size_t i = first; i < table.columns.size(); ++i) {
    out += out.empty() ? "" : ", ";
    out += std::string(table.columns[i].name) + " = ";
    out += dialect == Dialect::kSqlite ? std::string("?") : "$" + std::to_string(i - first + 1);
  }
  return out;
}

std::string column_list(const Table& table) {
  std::string out;
  for (const Column& column : table.columns) {
    out += (out.empty() ? "" : ", ") + std::string(column.name);
  }
  return out;
}

std::string insert_sql(const Table& table, Dialect dialect) {
  std::string values;
  for (std::size_t i = 1; i <= table.columns.size(); ++i) {
    values += i == 1 ? "" : ", ";
    values += dialect == Dialect::kSqlite ? std::string("?") : "$" + std::to_string(i);
  }
  return std::string("INSERT INTO ") + table.name + " (" + column_list(table) + ") VALUES (" +
         values + ")";
}

std::string create_table_sql(const Table& table, Dialect dialect) {
  // The indentation is the text's: SQLite keeps a table's CREATE text as written.
  const bool sqlite = dialect == Dialect::kSqlite;
  std::string out = std::string("CREATE TABLE IF NOT EXISTS ") + table.name + " (";
  const char* separator = table.one_line ? "" : "\n         ";
  for (const Column& column : table.columns) {
    if (!in_dialect(column.dialects, dialect)) continue;
    const char* rules = !sqlite && column.postgres_rules ? column.postgres_rules : column.rules;
    out += separator;
    out += column.name;
    out += ' ';
    out += sqlite ? column.sqlite_type : column.postgres_type;
    if (*rules != '\0') out += std::string(" ") + rules;
    separator = table.one_line ? ", " : ",\n         ";
  }
  for (const char* constraint : table.constraints) out += separator + std::string(constraint);
  if (dialect == Dialect::kSqlite) {
    for (const char* constraint : table.sqlite_only_constraints) {
      out += separator + std::string(constraint);
    }
  }
  return out + ")";
}

}  // namespace fedleaf::server
