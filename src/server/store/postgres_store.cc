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
    shard_ = run("SELECT pg_backend_pid()", Params()).int32(0, 0);
    side_.conn = pg_connect(url);
    pg_exec(side_.conn, kSideLockTimeout);
    sync_conn_ = pg_connect(url);
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

void PostgresStore::exec(const char* sql) { pg_exec(main_.conn, sql); }

PostgresStore::Rows PostgresStore::run_on(Connection& c, const char* sql, const Params& params) {
  auto it = c.prepared.find(sql);
  if (it == c.prepared.end()) {
    const std::string name = "s" + std::to_string(c.prepared.size());
    const PgResult prepared(PQprepare(c.conn, name.c_str(), sql, 0, nullptr),
                            std::string("prepare ") + sql);
    it = c.prepared.emplace(sql, name).first;
  }
  const auto values = params.pointers();
  const auto lengths = params.lengths();
  return Rows(PgResult(PQexecPrepared(c.conn, it->second.c_str(), params.size(), values.data(),
                                      lengths.data(), params.formats().data(), 0),
                       sql));
}

PostgresStore::Rows PostgresStore::run(const char* sql, const Params& params) {
  return run_on(main_, sql, params);
}

template <class Body>
void PostgresStore::side_transaction(Body&& body) {
  pg_exec(side_.conn, "BEGIN");
  try {
    pg_exec(side_.conn, "SET LOCAL synchronous_commit = off");
    body();
    pg_exec(side_.conn, "COMMIT");
  } catch (...) {
    PQclear(PQexec(side_.conn, "ROLLBACK"));
    throw;
  }
}

void PostgresStore::begin(Durability durability) {
  exec("BEGIN");
  if (durability == Durability::kNormal) exec("SET LOCAL synchronous_commit = off");
}
void PostgresStore::commit() { exec("COMMIT"); }
void PostgresStore::rollback() { exec("ROLLBACK"); }
void PostgresStore::begin_nested() { exec("SAVEPOINT step"); }
void PostgresStore::commit_nested() { exec("RELEASE SAVEPOINT step"); }
void PostgresStore::rollback_nested() {
  exec("ROLLBACK TO SAVEPOINT step");
  exec("RELEASE SAVEPOINT step");
}

void PostgresStore::sync() {
  std::lock_guard lock(sync_mutex_);
  // A transaction with an xid writes a commit record; waiting for its flush waits for every
  // WAL record before it (every earlier commit of any connection).
  pg_exec(sync_conn_, "BEGIN");
  try {
    pg_exec(sync_conn_, "SET LOCAL synchronous_commit = on");
    pg_exec(sync_conn_, "SELECT txid_current()");
    pg_exec(sync_conn_, "COMMIT");
  } catch (...) {
    PQclear(PQexec(sync_conn_, "ROLLBACK"));
    throw;
  }
}

// ---- populations

void PostgresStore::create_population(const PopulationRecord& p, const RoundRecord& round0,
                                      const ModelRecord& model0) {
  static const std::string sql = std::string("INSERT INTO populations (") + kPopulationColumns +
                                 ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, "
                                 "$13)";
  run(sql.c_str(), Params()
                       .text(p.id)
                       .text(p.plan_json)
                       .text(p.client_token_hash)
                       .integer(p.settings.rounds)
                       .integer(p.settings.clients_per_round)
                       .integer(p.settings.min_reports)
                       .real(p.settings.round_deadline_s)
                       .real(p.settings.lease_s)
                       .integer(p.settings.train_tasks_per_round)
                       .integer(p.settings.eval_tasks_per_round)
                       .text(to_string(p.state))
                       .integer(p.current_round)
                       .real(p.created_at));
  insert_round(round0);
  run("INSERT INTO models (population_id, round, etag, bytes) VALUES ($1, $2, $3, $4)",
      Params()
          .text(model0.population_id)
          .integer(model0.round)
          .text(model0.etag)
          .blob(model0.bytes));
}

std::optional<PopulationRecord> PostgresStore::find_population(const std::string& id) {
  static const std::string sql = select_from(kPopulationColumns, "populations WHERE id = $1");
  Rows rows = run(sql.c_str(), Params().text(id));
  if (rows.size() == 0) return std::nullopt;
  return read_population(rows, 0);
}

std::vector<PopulationRecord> PostgresStore::list_populations() {
  static const std::string sql = select_from(kPopulationColumns, "populations ORDER BY id");
  Rows rows = run(sql.c_str(), Params());
  std::vector<PopulationRecord> out;
  out.reserve(static_cast<std::size_t>(rows.size()));
  for (int i = 0; i < rows.size(); ++i) out.push_back(read_population(rows, i));
  return out;
}

// ---- rounds

void PostgresStore::insert_round(const RoundRecord& r) {
  static const std::string sql = std::string("INSERT INTO rounds (") + kRoundColumns +
                                 ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, "
                                 "$13, $14, $15, $16, $17, $18)";
  Params p;
  p.text(r.population_id).integer(r.number);
  add_round_fields(p, r);
  run(sql.c_str(), p);
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

std::optional<RoundRecord> PostgresStore::lock_open_round(const std::string& population_id,
                                                          int number) {
  // Every shard row, in one order (closers queue behind one another): this waits for the
  // accepts other servers have in flight, and an accept locks its shard row before it reads
  // whether the round is open. Then the round row, under whose lock shard rows are created (and
  // which a second closer waits for), and the shard rows created meanwhile. FOR NO KEY UPDATE
  // does not wait for the key-share locks that foreign keys take (every result insert takes
  // one). The round row is held only by short side transactions and by another closer (which
  // holds no shard row this one waits for).
  const char* shards_sql =
      "SELECT 1 FROM round_shards WHERE population_id = $1 AND round = $2 ORDER BY shard "
      "FOR UPDATE";
  run(shards_sql, Params().text(population_id).integer(number));
  static const std::string lock_sql = select_from(
      kRoundColumns, "rounds WHERE population_id = $1 AND number = $2 FOR NO KEY UPDATE");
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
  add_round_fields(fields, closed);
  fields.text(closed.population_id).integer(closed.number);
  // The counters lock_open_round summed (the round row plus its shards) replace the row's.
  Rows updated =
      run("UPDATE rounds SET status = $1, started_at = $2, deadline = $3, closed_at = $4, "
          "train_tasks = $5, eval_tasks = $6, reports = $7, examples = $8, loss_sum = $9, "
          "accuracy_sum = $10, accuracy_examples = $11, upload_bytes = $12, eval_reports = $13, "
          "eval_examples = $14, eval_sums_json = $15, robust_json = $16 WHERE population_id = $17 "
          "AND number = $18 AND status = 'open'",
          fields);
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

// ---- tasks and leases

std::optional<std::int64_t> PostgresStore::leasable_task(const ClaimRequest& r) {
  // A task another server is leasing right now is skipped, not waited for. Tasks created but
  // never leased (lease_expires_at 0) come first.
  Rows rows =
      run("SELECT t.id FROM tasks t JOIN rounds r ON r.population_id = t.population_id AND "
          "r.number = t.round WHERE t.population_id = $1 AND t.round = $2 AND t.kind = $3 AND "
          "t.state = 'leased' AND t.lease_expires_at <= $4 AND r.status = 'open' "
          "ORDER BY t.lease_expires_at, t.id LIMIT 1 FOR UPDATE OF t SKIP LOCKED",
          Params().text(r.population_id).integer(r.round).text(to_string(r.kind)).real(r.now));
  if (rows.size() == 0) return std::nullopt;
  return rows.int64(0, 0);
}

bool PostgresStore::create_task_chunk(const ClaimRequest& r) {
  const bool train = r.kind == TaskKind::kTrain;
  // Read without the lock first: a round whose tasks are all created is not locked at all.
  const char* count_sql = train ? "SELECT train_tasks FROM rounds WHERE population_id = $1 AND "
                                  "number = $2 AND status = 'open'"
                                : "SELECT eval_tasks FROM rounds WHERE population_id = $1 AND "
                                  "number = $2 AND status = 'open'";
  Rows counted = run(count_sql, Params().text(r.population_id).integer(r.round));
  if (counted.size() == 0 || counted.int32(0, 0) >= r.limit) return false;
  bool created_some = false;
  side_transaction([&] {
    Rows locked = run_on(side_,
                         train ? "SELECT train_tasks FROM rounds WHERE population_id = $1 AND "
                                 "number = $2 AND status = 'open' FOR NO KEY UPDATE"
                               : "SELECT eval_tasks FROM rounds WHERE population_id = $1 AND "
                                 "number = $2 AND status = 'open' FOR NO KEY UPDATE",
                         Params().text(r.population_id).integer(r.round));
    if (locked.size() == 0) return;
    const int created = locked.int32(0, 0);
    if (created >= r.limit) {
      created_some = true;  // by another server while this one waited: look again
      return;
    }
    const int chunk = std::min(r.limit - created, kTaskChunk);
    run_on(side_,
           train ? "UPDATE rounds SET train_tasks = $1 WHERE population_id = $2 AND number = $3"
                 : "UPDATE rounds SET eval_tasks = $1 WHERE population_id = $2 AND number = $3",
           Params().integer(created + chunk).text(r.population_id).integer(r.round));
    run_on(side_,
           "INSERT INTO tasks (population_id, round, kind, state, lease_id, lease_expires_at, "
           "completed_lease_id, result_sha256, result_status, result_body) "
           "SELECT $1, $2, $3, 'leased', 0, 0, 0, '', 0, '' FROM generate_series(1, $4)",
           Params().text(r.population_id).integer(r.round).text(to_string(r.kind)).integer(chunk));
    created_some = true;
  });
  return created_some;
}

std::optional<ClaimedTask> PostgresStore::claim_task(const ClaimRequest& r) {
  std::optional<std::int64_t> task_id = leasable_task(r);
  // A chunk of tasks at once, committed at once on the side connection (never leased, they are
  // any server's to lease; a claim that rolls back leaves them): one wait for the round row per
  // chunk, and no round row locked until this server's batch commits.
  if (!task_id && create_task_chunk(r)) task_id = leasable_task(r);
  if (!task_id) return std::nullopt;
  Rows lease =
      run("INSERT INTO leases (task_id, token_hash, expires_at) VALUES ($1, $2, $3) RETURNING id",
          Params().integer(*task_id).text(r.lease_token_hash).real(r.lease_expires_at));
  const std::int64_t lease_id = lease.int64(0, 0);
  run("UPDATE tasks SET lease_id = $1, lease_expires_at = $2 WHERE id = $3",
      Params().integer(lease_id).real(r.lease_expires_at).integer(*task_id));
  return ClaimedTask{*task_id, lease_id};
}

std::optional<TaskRecord> PostgresStore::find_task(std::int64_t id) {
  static const std::string sql = select_from(kTaskColumns, "tasks WHERE id = $1");
  Rows rows = run(sql.c_str(), Params().integer(id));
  if (rows.size() == 0) return std::nullopt;
  return read_task(rows, 0);
}

std::optional<RoundRecord> PostgresStore::shard_of(const char* sql, const Params& key) {
  Rows rows = run(sql, key);
  if (rows.size() == 0) return std::nullopt;
  return read_shard(rows, 0, 0);
}

AcceptOutcome PostgresStore::accept_result(const AcceptRequest& r) {
  static const std::string task_sql = select_from(kTaskColumns, "tasks WHERE id = $1 FOR UPDATE");
  AcceptOutcome out;
  {
    Rows rows = run(task_sql.c_str(), Params().integer(r.task_id));
    if (rows.size() == 0) throw NotFound("task " + std::to_string(r.task_id) + " does not exist");
    out.task = read_task(rows, 0);
  }
  out.status = classify_upload(out.task, r);
  if (out.status != AcceptStatus::kAccepted) return out;
  const std::string& population_id = out.task.population_id;
  const int number = out.task.round;
  const bool train = out.task.kind == TaskKind::kTrain;
  // This store's shard row, locked before the round is read: a closer (lock_open_round) locks
  // every shard row, so it waits for this report, or this report sees the round closed. The
  // first report of the round here creates the row first (committed at once, under the round
  // row's lock: a closer holding it sees the row).
  const char* shard_sql =
      "SELECT reports, examples, loss_sum, accuracy_sum, accuracy_examples, upload_bytes, "
      "eval_reports, eval_examples, eval_sums_json FROM round_shards WHERE population_id = $1 "
      "AND round = $2 AND shard = $3 FOR UPDATE";
  const Params shard_key = Params().text(population_id).integer(number).integer(shard_);
  std::optional<RoundRecord> locked_shard = shard_of(shard_sql, shard_key);
  if (!locked_shard) {
    if (!create_shard(population_id, number, train)) {
      out.status = AcceptStatus::kRoundClosed;
      return out;
    }
    locked_shard = shard_of(shard_sql, shard_key);
    if (!locked_shard) throw Error("postgres store: the shard row just created is missing");
  }
  RoundRecord shard = std::move(*locked_shard);
  std::optional<RoundRecord> round = find_round(population_id, number);
  if (!round) throw NotFound("the round of task " + std::to_string(r.task_id) + " is missing");
  if (train && round->status != RoundStatus::kOpen) {
    out.status = AcceptStatus::kRoundClosed;
    return out;
  }
  apply_delta(shard, out.task.kind, r.delta);
  apply_delta(*round, out.task.kind, r.delta);
  run("UPDATE round_shards SET reports = $4, examples = $5, loss_sum = $6, accuracy_sum = $7, "
      "accuracy_examples = $8, upload_bytes = $9, eval_reports = $10, eval_examples = $11, "
      "eval_sums_json = $12 WHERE population_id = $1 AND round = $2 AND shard = $3",
      Params()
          .text(population_id)
          .integer(number)
          .integer(shard_)
          .integer(shard.reports)
          .real(shard.examples)
          .real(shard.loss_sum)
          .real(shard.accuracy_sum)
          .real(shard.accuracy_examples)
          .integer(shard.upload_bytes)
          .integer(shard.eval_reports)
          .real(shard.eval_examples)
          .text(shard.eval_sums_json));
  if (train) {
    Rows inserted =
        run("INSERT INTO results (population_id, round, seq, task_id, bytes) VALUES ($1, $2, "
            "nextval('result_seq'), $3, $4) RETURNING seq",
            Params().text(population_id).integer(number).integer(r.task_id).blob(r.train_bytes));
    out.seq = inserted.int64(0, 0);
  }
  complete_task(out.task, r, round->reports);
  run("UPDATE tasks SET state = $1, completed_lease_id = $2, result_sha256 = $3, "
      "result_status = $4, result_body = $5 WHERE id = $6",
      Params()
          .text(to_string(out.task.state))
          .integer(out.task.completed_lease_id)
          .text(out.task.result_sha256)
          .integer(out.task.result_status)
          .text(out.task.result_body)
          .integer(out.task.id));
  out.round = std::move(*round);
  return out;
}

bool PostgresStore::create_shard(const std::string& population_id, int number, bool open_only) {
  bool created = false;
  side_transaction([&] {
    Rows round = run_on(side_,
                        "SELECT status FROM rounds WHERE population_id = $1 AND number = $2 "
                        "FOR NO KEY UPDATE",
                        Params().text(population_id).integer(number));
    if (round.size() == 0) {
      throw NotFound("round " + std::to_string(number) + " of population '" + population_id +
                     "' does not exist");
    }
    if (open_only && parse_round_status(round.text(0, 0)) != RoundStatus::kOpen) return;
    run_on(side_,
           "INSERT INTO round_shards (population_id, round, shard, reports, examples, loss_sum, "
           "accuracy_sum, accuracy_examples, upload_bytes, eval_reports, eval_examples, "
           "eval_sums_json) VALUES ($1, $2, $3, 0, 0, 0, 0, 0, 0, 0, 0, '{}') "
           "ON CONFLICT DO NOTHING",
           Params().text(population_id).integer(number).integer(shard_));
    created = true;
  });
  return created;
}

bool PostgresStore::has_leasable_task(const std::string& population_id, int round, double now) {
  return leasable_rows(population_id, round, now, false);
}

bool PostgresStore::has_expired_lease(const std::string& population_id, int round, double now) {
  return leasable_rows(population_id, round, now, true);
}

bool PostgresStore::leasable_rows(const std::string& population_id, int round, double now,
                                  bool leased_before) {
  Rows rows =
      run(leased_before ? "SELECT 1 FROM tasks WHERE population_id = $1 AND round = $2 AND kind IN "
                          "('train', 'evaluate') AND state = 'leased' AND lease_expires_at <= $3 "
                          "AND lease_id <> 0 LIMIT 1"
                        : "SELECT 1 FROM tasks WHERE population_id = $1 AND round = $2 AND kind IN "
                          "('train', 'evaluate') AND state = 'leased' AND lease_expires_at <= $3 "
                          "LIMIT 1",
          Params().text(population_id).integer(round).real(now));
  return rows.size() > 0;
}

std::optional<double> PostgresStore::next_lease_expiry(const std::string& population_id, int round,
                                                       double now) {
  Rows rows =
      run("SELECT min(lease_expires_at) FROM tasks WHERE population_id = $1 AND round = $2 AND "
          "kind IN ('train', 'evaluate') AND state = 'leased' AND lease_expires_at > $3",
          Params().text(population_id).integer(round).real(now));
  if (rows.size() == 0 || rows.is_null(0, 0)) return std::nullopt;
  return rows.real(0, 0);
}

std::int64_t PostgresStore::count_active_leases(double now) {
  Rows rows = run("SELECT count(*) FROM tasks WHERE state = 'leased' AND lease_expires_at > $1",
                  Params().real(now));
  return rows.int64(0, 0);
}

std::vector<LeaseRecord> PostgresStore::list_leases(std::int64_t task_id) {
  Rows rows =
      run("SELECT id, task_id, token_hash, expires_at FROM leases WHERE task_id = $1 ORDER BY id",
          Params().integer(task_id));
  std::vector<LeaseRecord> out;
  out.reserve(static_cast<std::size_t>(rows.size()));
  for (int i = 0; i < rows.size(); ++i) {
    out.push_back({rows.int64(i, 0), rows.int64(i, 1), rows.text(i, 2), rows.real(i, 3)});
  }
  return out;
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

// ---- rejections

bool PostgresStore::add_rejection(const RefusedUpload& upload) {
  if (upload.lease_id != 0) {
    // A second server counting the same upload waits for this row lock, then finds it marked.
    Rows marked =
        run("UPDATE leases SET refused_sha256 = $2 WHERE id = $1 AND refused_sha256 <> $2",
            Params().integer(upload.lease_id).text(upload.result_sha256));
    if (marked.affected() == 0) return false;
  }
  run("INSERT INTO rejections (population_id, reason, count) VALUES ($1, $2, 1) "
      "ON CONFLICT (population_id, reason) DO UPDATE SET count = rejections.count + 1",
      Params().text(upload.population_id).text(upload.reason));
  return true;
}

std::map<std::string, std::int64_t> PostgresStore::rejections(const std::string& population_id) {
  Rows rows = run("SELECT reason, count FROM rejections WHERE population_id = $1",
                  Params().text(population_id));
  std::map<std::string, std::int64_t> out;
  for (int i = 0; i < rows.size(); ++i) out[rows.text(i, 0)] = rows.int64(i, 1);
  return out;
}

}  // namespace fedleaf::server
