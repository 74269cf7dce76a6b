#include "server/store/store_tables.h"

namespace fedleaf::server {

namespace {

constexpr const char* kNotNull = "NOT NULL";
constexpr const char* kRoundFk =
    "FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)";

Column text(const char* name, const char* rules = kNotNull) {
  return {name, "TEXT", "TEXT", rules};
}
Column integer(const char* name) { return {name, "INTEGER", "INTEGER", kNotNull}; }
Column bigint(const char* name) { return {name, "INTEGER", "BIGINT", kNotNull}; }
Column real(const char* name) { return {name, "REAL", "DOUBLE PRECISION", kNotNull}; }

}  // namespace

const Table kPopulationsTable{
    "populations",
    {text("id", "PRIMARY KEY"), text("plan_json"), text("client_token_hash"), integer("rounds"),
     integer("clients_per_round"), integer("min_reports"), real("round_deadline_s"),
     real("lease_s"), integer("train_tasks_per_round"), integer("eval_tasks_per_round"),
     text("state", "NOT NULL CHECK (state IN ('running', 'finished'))"), integer("current_round"),
     real("created_at")},
    {}};

const Table kRoundsTable{
    "rounds",
    {text("population_id", "NOT NULL REFERENCES populations(id)"), integer("number"),
     text("status", "NOT NULL CHECK (status IN ('open', 'closed'))"), real("started_at"),
     real("deadline"), real("closed_at"), integer("train_tasks"), integer("eval_tasks"),
     integer("reports"), real("examples"), real("loss_sum"), real("accuracy_sum"),
     real("accuracy_examples"), bigint("upload_bytes"), integer("eval_reports"),
     real("eval_examples"), text("eval_sums_json"), text("robust_json", "NOT NULL DEFAULT '{}'")},
    {"PRIMARY KEY (population_id, number)"}};

const Table kTasksTable{"tasks",
                        {{"id", "INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY", ""},
                         text("population_id"),
                         integer("round"),
                         text("kind", "NOT NULL CHECK (kind IN ('train', 'evaluate'))"),
                         text("state", "NOT NULL CHECK (state IN ('leased', 'done'))"),
                         bigint("lease_id"),
                         real("lease_expires_at"),
                         bigint("completed_lease_id"),
                         text("result_sha256"),
                         integer("result_status"),
                         text("result_body")},
                        {kRoundFk}};

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
  constexpr const char* kIndent = "\n         ";
  std::string out = std::string("CREATE TABLE IF NOT EXISTS ") + table.name + " (";
  const char* separator = kIndent;
  for (const Column& column : table.columns) {
    out += separator;
    out += column.name;
    out += ' ';
    out += dialect == Dialect::kSqlite ? column.sqlite_type : column.postgres_type;
    if (*column.rules != '\0') out += std::string(" ") + column.rules;
    separator = ",\n         ";
  }
  for (const char* constraint : table.constraints) out += separator + std::string(constraint);
  return out + ")";
}

}  // namespace fedleaf::server
