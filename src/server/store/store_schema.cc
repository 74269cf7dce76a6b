#include "server/store/store_schema.h"

namespace fedleaf::server {
namespace {

constexpr Dialects kSqliteOnly = Dialects::kSqliteOnly;
constexpr Dialects kPostgresOnly = Dialects::kPostgresOnly;
constexpr const char* kRoundFk =
    "FOREIGN KEY (population_id, round) REFERENCES rounds(population_id, number)";
constexpr const char* kPopulationFk = "NOT NULL REFERENCES populations(id)";

const Table kSchemaVersionTable{
    "schema_version", {integer_column("version")}, {}, {}, {}, Dialects::kBoth, true};

// A model's bytes. SQLite (version 3): in `bytes` ('blob') or in a file of the model directory
// ('file': `bytes` empty); PostgreSQL keeps them in the row.
const Table kModelsTable{
    "models",
    {text_column("population_id"), integer_column("round"), text_column("etag"),
     blob_column("bytes"),
     only_in(
         kSqliteOnly,
         text_column("storage", "NOT NULL DEFAULT 'blob' CHECK (storage IN ('blob', 'file'))"))},
    {"PRIMARY KEY (population_id, round)", kRoundFk}};

// PostgreSQL version 6: no foreign keys on the rows every claim and report writes (tasks,
// leases, results; SQLite keeps them). The server writes them only under the row they would
// point to (a task under its round's lock, a lease and a result under their task's), deletes no
// task, round or population, and its own reads are the checks; each key was a lookup and a KEY
// SHARE lock (on the round row: a multixact among servers) per row written.
const Column kTaskId = [] {
  Column c = bigint_column("task_id", "NOT NULL REFERENCES tasks(id)");
  c.postgres_rules = "NOT NULL";
  return c;
}();

const Table kLeasesTable{
    "leases",
    {ddl_column("id", "INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY", ""), kTaskId,
     text_column("token_hash"), real_column("expires_at"),
     text_column("refused_sha256", "NOT NULL DEFAULT ''"),
     text_column("client_key", "NOT NULL DEFAULT ''")},
    {},
    {},
    {{"CREATE INDEX IF NOT EXISTS leases_by_task ON leases (task_id)"}}};

// PostgreSQL: one result per task and one per seq (a second acceptance is a unique violation
// even if the locks were bypassed); seqs come from one sequence (no round row to count on),
// increasing in the order the results were accepted, so a round's results read in seq order are
// folded as one server would have folded them.
const Table kResultsTable{
    "results",
    {text_column("population_id"), integer_column("round"), bigint_column("seq"),
     [] {
       Column c = kTaskId;
       c.postgres_rules = "NOT NULL UNIQUE";
       return c;
     }(),
     blob_column("bytes")},
    {"PRIMARY KEY (population_id, round, seq)"},
    {kRoundFk},
    {{"CREATE SEQUENCE IF NOT EXISTS result_seq", kPostgresOnly}}};

// PostgreSQL: a round's report counters while it is open, one row per server connection (shard
// = its backend pid): an accept adds to its own row only, so servers never wait for one
// another's commits; a round's counters are its row plus its shards (close_round folds them
// in). A closer locks every shard row first: that waits for the accepts in flight, and an accept
// locks its shard row before it reads whether the round is open. Version 7: no foreign key to
// rounds (a shard row is created under its round row's lock, and deleted by the close that
// holds it; no round is deleted): its check was a KEY SHARE lock on the round row per batch.
const Table kRoundShardsTable{
    "round_shards",
    {text_column("population_id"), integer_column("round"), bigint_column("shard"),
     integer_column("reports"), real_column("examples"), real_column("loss_sum"),
     real_column("accuracy_sum"), real_column("accuracy_examples"), bigint_column("upload_bytes"),
     integer_column("eval_reports"), real_column("eval_examples"), text_column("eval_sums_json")},
    {"PRIMARY KEY (population_id, round, shard)"},
    {},
    {},
    kPostgresOnly};

const Table kCheckpointsTable{"checkpoints",
                              {text_column("population_id"), integer_column("round"),
                               bigint_column("seq"), blob_column("bytes")},
                              {"PRIMARY KEY (population_id, round)", kRoundFk}};

const Table kRejectionsTable{
    "rejections",
    {text_column("population_id", kPopulationFk), text_column("reason"), bigint_column("count")},
    {"PRIMARY KEY (population_id, reason)"}};

// The server optimizer's state with the latest model (OptimizerStateRecord; SQLite 5,
// PostgreSQL 4). SQLite: its bytes in a file of the model directory ('file': `bytes` empty) or
// in the row ('blob': an in-memory store).
const Table kOptimizerStatesTable{
    "optimizer_states",
    {text_column("population_id"), integer_column("round"), text_column("etag"),
     blob_column("bytes"),
     only_in(kSqliteOnly, text_column("storage", "NOT NULL CHECK (storage IN ('blob', 'file'))"))},
    {"PRIMARY KEY (population_id, round)", kRoundFk}};

// Each population's client tokens (ClientTokenRecord; SQLite 8, PostgreSQL 9), by their hash.
const Table kClientTokensTable{
    "client_tokens",
    {text_column("population_id", kPopulationFk), integer_column("id"), text_column("token_hash"),
     real_column("created_at"), real_column("revoked_at", "NOT NULL DEFAULT 0")},
    {"PRIMARY KEY (population_id, id)"},
    {},
    {{R"sql(CREATE INDEX IF NOT EXISTS client_tokens_by_hash
         ON client_tokens (population_id, token_hash))sql"}}};

// A private population's devices (DeviceRecord; SQLite 9, PostgreSQL 10), found by their
// credential's hash on every claim (devices_by_credential: a million devices cost a claim one
// index probe).
const Table kDevicesTable{
    "devices",
    {text_column("population_id", kPopulationFk), text_column("id"), text_column("credential_hash"),
     text_column("token_hash"), real_column("enrolled_at"),
     real_column("revoked_at", "NOT NULL DEFAULT 0"),
     integer_column("participations", "NOT NULL DEFAULT 0"),
     integer_column("last_round", "NOT NULL DEFAULT -1")},
    {"PRIMARY KEY (population_id, id)"},
    {},
    {{R"sql(CREATE UNIQUE INDEX IF NOT EXISTS devices_by_credential
         ON devices (population_id, credential_hash))sql"}}};

// Each client token's enrollments in a population, numbered 1, 2, … in order (enroll_device;
// SQLite 10, PostgreSQL 11): the hourly limit reads the one enrollment `limit` back, an index
// probe however many devices the token enrolled (the versions before counted the hour's rows).
const Table kDeviceEnrollmentsTable{
    "device_enrollments",
    {text_column("population_id", kPopulationFk), text_column("token_hash"), bigint_column("seq"),
     real_column("enrolled_at")},
    {"PRIMARY KEY (population_id, token_hash, seq)"}};

}  // namespace

const std::vector<const Table*>& store_tables() {
  static const std::vector<const Table*> tables{
      &kSchemaVersionTable, &kPopulationsTable,      &kRoundsTable,          &kModelsTable,
      &kTasksTable,         &kLeasesTable,           &kResultsTable,         &kRoundShardsTable,
      &kCheckpointsTable,   &kRejectionsTable,       &kOptimizerStatesTable, &kClientTokensTable,
      &kDevicesTable,       &kDeviceEnrollmentsTable};
  return tables;
}

std::vector<std::string> store_schema(Dialect dialect) {
  std::vector<std::string> out;
  for (const Table* table : store_tables()) {
    if (!in_dialect(table->dialects, dialect)) continue;
    out.push_back(create_table_sql(*table, dialect));
    for (const Statement& statement : table->after) {
      if (in_dialect(statement.dialects, dialect)) out.emplace_back(statement.sql);
    }
  }
  return out;
}

}  // namespace fedleaf::server
