#include "server/store/postgres_store.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/error.h"
#include "server/store/postgres_rows.h"
#include "server/store/postgres_statement.h"
#include "server/store/store_rules.h"

namespace fedleaf::server {

PostgresStore::PostgresStore(const std::string& url, const PostgresSchemaSetup& setup) {
  main_.conn = pg_connect(url);
  try {
    exec("SET client_min_messages = warning");
    set_up_postgres_schema(main_.conn, setup);
    // Every transaction of the main and side connections is kNormal unless begin() says kFull:
    // set once per session, not per transaction (a round trip each).
    exec("SET synchronous_commit = off");
    shard_ = run("SELECT pg_backend_pid()", Params()).int32(0, 0);
    side_.conn = pg_connect(url);
    pg_exec(side_.conn, kSideLockTimeout);
    pg_exec(side_.conn, "SET synchronous_commit = off");
    sync_conn_ = pg_connect(url);
    pg_exec(sync_conn_, "SET synchronous_commit = on");
  } catch (...) {
    PQfinish(side_.conn);
    PQfinish(main_.conn);
    throw;
  }
}

PostgresStore::~PostgresStore() {
  PQfinish(sync_conn_);
  PQfinish(side_.conn);
  PQfinish(main_.conn);
}

const std::string& PostgresStore::prepared_name(Connection& c, const char* sql) {
  auto it = c.prepared.find(sql);
  if (it == c.prepared.end()) {
    const std::string name = "s" + std::to_string(c.prepared.size());
    const PgResult prepared(PQprepare(c.conn, name.c_str(), sql, 0, nullptr),
                            std::string("prepare ") + sql);
    it = c.prepared.emplace(sql, name).first;
  }
  return it->second;
}

PostgresStore::Rows PostgresStore::run_on(Connection& c, const char* sql, const Params& params) {
  const std::string& name = prepared_name(c, sql);
  const auto values = params.pointers();
  const auto lengths = params.lengths();
  return Rows(PgResult(PQexecPrepared(c.conn, name.c_str(), params.size(), values.data(),
                                      lengths.data(), params.formats().data(), 0),
                       sql));
}

PostgresStore::Rows PostgresStore::run(const char* sql, const Params& params) {
  if (pending_.empty()) return run_on(main_, sql, params);
  const std::string& name = prepared_name(main_, sql);
  const std::vector<const char*> before = std::exchange(pending_, {});
  return Rows(pg_pipeline(main_.conn, before, {name.c_str(), &params, nullptr}, sql));
}

void PostgresStore::exec(const char* sql) {
  if (pending_.empty()) return pg_exec(main_.conn, sql);
  const std::vector<const char*> before = std::exchange(pending_, {});
  pg_pipeline(main_.conn, before, {nullptr, nullptr, sql}, sql);
}

// Transaction control is queued (pending_) and sent with the next statement in one round trip:
// a claim or an upload is a step of the open batch, and its BEGIN (the batch's first step),
// SAVEPOINT and the previous step's RELEASE cost no round trip of their own. A transaction or a
// step that ran no statement is never sent; COMMIT releases a step's savepoint itself.
void PostgresStore::begin(Durability durability) {
  pending_.assign({kBegin});
  if (durability == Durability::kFull) pending_.push_back("SET LOCAL synchronous_commit = on");
}
void PostgresStore::commit() {
  const bool sent = pending_.empty() || pending_.front() != kBegin;
  pending_.clear();
  if (sent) exec("COMMIT");
}
void PostgresStore::rollback() {
  const bool sent = pending_.empty() || pending_.front() != kBegin;
  pending_.clear();
  if (sent) exec("ROLLBACK");
}
void PostgresStore::begin_nested() { pending_.push_back(kSavepoint); }
void PostgresStore::commit_nested() {
  if (!pending_.empty() && pending_.back() == kSavepoint) {
    pending_.pop_back();  // the step ran nothing
  } else {
    pending_.push_back(kRelease);
  }
}
void PostgresStore::rollback_nested() {
  if (!pending_.empty() && pending_.back() == kSavepoint) {
    pending_.pop_back();
    return;
  }
  exec("ROLLBACK TO SAVEPOINT step");
  exec(kRelease);
}

void PostgresStore::sync() {
  std::lock_guard lock(sync_mutex_);
  // A transaction with an xid writes a commit record; waiting for its flush (this session's
  // synchronous_commit is on) waits for every WAL record before it (every earlier commit of any
  // connection). One statement, its own transaction: one round trip.
  pg_exec(sync_conn_, "SELECT txid_current()");
}

// ---- populations

void PostgresStore::create_population(const PopulationRecord& p, const RoundRecord& round0,
                                      const ModelRecord& model0) {
  static const std::string sql = insert_sql(kPopulationsTable, Dialect::kPostgres);
  Params params;
  run(sql.c_str(), add_values(params, values_of(p)));
  insert_round(round0);
  run("INSERT INTO models (population_id, round, etag, bytes) VALUES ($1, $2, $3, $4)",
      Params()
          .text(model0.population_id)
          .integer(model0.round)
          .text(model0.etag)
          .blob(model0.bytes));
  insert_client_token({p.id, 0, p.client_token_hash, p.created_at, 0});
}

std::optional<PopulationRecord> PostgresStore::find_population(const std::string& id) {
  static const std::string sql =
      select_from(column_list(kPopulationsTable), "populations WHERE id = $1");
  Rows rows = run(sql.c_str(), Params().text(id));
  if (rows.size() == 0) return std::nullopt;
  return read_population(rows, 0);
}

std::vector<PopulationRecord> PostgresStore::list_populations() {
  static const std::string sql =
      select_from(column_list(kPopulationsTable), "populations ORDER BY id");
  Rows rows = run(sql.c_str(), Params());
  std::vector<PopulationRecord> out;
  out.reserve(static_cast<std::size_t>(rows.size()));
  for (int i = 0; i < rows.size(); ++i) out.push_back(read_population(rows, i));
  return out;
}

// ---- rounds

void PostgresStore::insert_round(const RoundRecord& r) {
  static const std::string sql = insert_sql(kRoundsTable, Dialect::kPostgres);
  Params p;
  run(sql.c_str(), add_values(p, values_of(r)));
}

std::optional<RoundRecord> PostgresStore::round_row(const char* sql,
                                                    const std::string& population_id, int number) {
  Rows rows = run(sql, Params().text(population_id).integer(number));
  if (rows.size() == 0) return std::nullopt;
  return read_round(rows, 0);
}

std::optional<RoundRecord> PostgresStore::find_round(const std::string& population_id, int number) {
  static const std::string sql = rounds_with_shards("r.population_id = $1 AND r.number = $2");
  std::vector<RoundRecord> rounds =
      read_rounds_with_shards(run(sql.c_str(), Params().text(population_id).integer(number)));
  if (rounds.empty()) return std::nullopt;
  return std::move(rounds.front());
}

std::vector<RoundRecord> PostgresStore::list_rounds(const std::string& population_id) {
  static const std::string sql = rounds_with_shards("r.population_id = $1");
  return read_rounds_with_shards(run(sql.c_str(), Params().text(population_id)));
}

std::optional<PopulationProgress> PostgresStore::find_progress(const std::string& population_id,
                                                               int number) {
  static const std::string sql = progress_with_shards();
  Rows rows = run(sql.c_str(), Params().text(population_id).integer(number));
  if (rows.size() == 0) return std::nullopt;
  const int first = static_cast<int>(kRoundsTable.columns.size()) + kShardCounterColumns;
  PopulationProgress out{parse_run_state(rows.text(0, first)),
                         rows.int32(0, first + 1),
                         rows.int32(0, first + 2) != 0,
                         rows.int64(0, first + 3),
                         {}};
  if (!rows.is_null(0, 0)) out.round = std::move(read_rounds_with_shards(rows).front());
  return out;
}

std::optional<RoundRecord> PostgresStore::lock_open_round(const std::string& population_id,
                                                          int number) {
  // Every shard row, in one order (closers queue behind one another): this waits for the
  // accepts other servers have in flight, and an accept locks its shard row before it reads
  // whether the round is open. Then the round row, under whose lock shard rows are created (and
  // which a second closer waits for), and the shard rows created meanwhile. FOR NO KEY UPDATE
  // does not wait for the key-share locks that the remaining foreign keys to rounds take (models,
  // checkpoints, optimizer states; results have none since schema 6, shard rows since 7). The round
  // row is held only by short side transactions and by another closer (which holds no shard row
  // this one waits for).
  const char* shards_sql =
      "SELECT 1 FROM round_shards WHERE population_id = $1 AND round = $2 ORDER BY shard "
      "FOR UPDATE";
  run(shards_sql, Params().text(population_id).integer(number));
  static const std::string lock_sql =
      select_from(column_list(kRoundsTable),
                  "rounds WHERE population_id = $1 AND number = $2 FOR NO KEY UPDATE");
  if (!open_round_or_nothing(round_row(lock_sql.c_str(), population_id, number), population_id,
                             number)) {
    return std::nullopt;
  }
  run(shards_sql, Params().text(population_id).integer(number));
  return find_round(population_id, number);  // a new snapshot: every accept committed before
}

void PostgresStore::close_round(const RoundCloseWrite& close) {
  RoundRecord closed = close.closed;
  closed.status = RoundStatus::kClosed;
  Params fields;
  add_values(fields, values_of(closed), 2);  // every column after the key
  fields.text(closed.population_id).integer(closed.number);
  // The counters lock_open_round summed (the round row plus its shards) replace the row's.
  static const std::string key = std::to_string(kRoundsTable.columns.size() - 1);
  static const std::string sql =
      "UPDATE rounds SET " + assignments_sql(kRoundsTable, 2, Dialect::kPostgres) +
      " WHERE population_id = $" + key + " AND number = $" +
      std::to_string(kRoundsTable.columns.size()) + " AND status = 'open'";
  Rows updated = run(sql.c_str(), fields);
  if (updated.affected() == 0) {
    throw Conflict("round " + std::to_string(closed.number) + " of population '" +
                   closed.population_id + "' is not open");
  }
  run("DELETE FROM round_shards WHERE population_id = $1 AND round = $2",
      Params().text(closed.population_id).integer(closed.number));
  if (close.drop_results) drop_results(closed.population_id, closed.number);
  run("DELETE FROM checkpoints WHERE population_id = $1 AND round = $2",
      Params().text(closed.population_id).integer(closed.number));
  if (close.opened) insert_round(*close.opened);
  if (close.model) {
    run("INSERT INTO models (population_id, round, etag, bytes) VALUES ($1, $2, $3, $4)",
        Params()
            .text(close.model->population_id)
            .integer(close.model->round)
            .text(close.model->etag)
            .blob(close.model->bytes));
  }
  if (close.optimizer_state) {
    const OptimizerStateRecord& state = *close.optimizer_state;
    run("DELETE FROM optimizer_states WHERE population_id = $1 AND round < $2",
        Params().text(state.population_id).integer(state.round));
    run("INSERT INTO optimizer_states (population_id, round, etag, bytes) VALUES ($1, $2, $3, $4)",
        Params().text(state.population_id).integer(state.round).text(state.etag).blob(state.bytes));
  }
  Rows population = run("UPDATE populations SET state = $1, current_round = $2 WHERE id = $3",
                        Params()
                            .text(to_string(close.population.state))
                            .integer(close.population.current_round)
                            .text(close.population.id));
  if (population.affected() == 0) {
    throw NotFound("population '" + close.population.id + "' does not exist");
  }
}

// ---- models

void PostgresStore::drop_results(const std::string& population_id, int through_round) {
  run("DELETE FROM results WHERE population_id = $1 AND round <= $2",
      Params().text(population_id).integer(through_round));
}

std::vector<int> PostgresStore::drop_models(const std::string& population_id, int before_round,
                                            double now) {
  Rows rows = run(
      "DELETE FROM models AS m WHERE population_id = $1 AND round < $2 AND NOT EXISTS (SELECT 1 "
      "FROM tasks AS t WHERE t.population_id = m.population_id AND t.round = m.round AND "
      "t.state = 'leased' AND t.lease_expires_at > $3) RETURNING round",
      Params().text(population_id).integer(before_round).real(now));
  std::vector<int> rounds;
  rounds.reserve(rows.size());
  for (int i = 0; i < rows.size(); ++i) rounds.push_back(rows.int32(i, 0));
  std::sort(rounds.begin(), rounds.end());
  return rounds;
}

std::optional<ModelRecord> PostgresStore::find_model(const std::string& population_id, int round) {
  Rows rows = run("SELECT etag, bytes FROM models WHERE population_id = $1 AND round = $2",
                  Params().text(population_id).integer(round));
  if (rows.size() == 0) return std::nullopt;
  return ModelRecord{population_id, round, rows.text(0, 0), rows.blob(0, 1)};
}

// ---- results and checkpoints

std::vector<ResultRecord> PostgresStore::list_results(const std::string& population_id, int round,
                                                      std::int64_t after_seq) {
  Rows rows =
      run("SELECT seq, task_id, bytes FROM results WHERE population_id = $1 AND round = $2 AND "
          "seq > $3 ORDER BY seq",
          Params().text(population_id).integer(round).integer(after_seq));
  std::vector<ResultRecord> out;
  out.reserve(static_cast<std::size_t>(rows.size()));
  for (int i = 0; i < rows.size(); ++i) {
    out.push_back({population_id, round, rows.int64(i, 0), rows.int64(i, 1), rows.blob(i, 2)});
  }
  return out;
}

std::map<int, std::int64_t> PostgresStore::count_results_by_task_round(
    const std::string& population_id, int round) {
  Rows rows =
      run("SELECT tasks.round, count(*) FROM results JOIN tasks ON tasks.id = results.task_id "
          "WHERE results.population_id = $1 AND results.round = $2 GROUP BY tasks.round",
          Params().text(population_id).integer(round));
  std::map<int, std::int64_t> out;
  for (int i = 0; i < rows.size(); ++i) out[rows.int32(i, 0)] = rows.int64(i, 1);
  return out;
}

void PostgresStore::put_checkpoint(const CheckpointRecord& c) {
  run("INSERT INTO checkpoints (population_id, round, seq, bytes) VALUES ($1, $2, $3, $4) "
      "ON CONFLICT (population_id, round) DO UPDATE SET seq = excluded.seq, "
      "bytes = excluded.bytes",
      Params().text(c.population_id).integer(c.round).integer(c.seq).blob(c.bytes));
}

std::optional<CheckpointRecord> PostgresStore::find_checkpoint(const std::string& population_id,
                                                               int round) {
  Rows rows = run("SELECT seq, bytes FROM checkpoints WHERE population_id = $1 AND round = $2",
                  Params().text(population_id).integer(round));
  if (rows.size() == 0) return std::nullopt;
  return CheckpointRecord{population_id, round, rows.int64(0, 0), rows.blob(0, 1)};
}

std::optional<OptimizerStateRecord> PostgresStore::find_optimizer_state(
    const std::string& population_id, int round) {
  Rows rows =
      run("SELECT etag, bytes FROM optimizer_states WHERE population_id = $1 AND round = $2",
          Params().text(population_id).integer(round));
  if (rows.size() == 0) return std::nullopt;
  return OptimizerStateRecord{population_id, round, rows.text(0, 0), rows.blob(0, 1)};
}

}  // namespace fedleaf::server
