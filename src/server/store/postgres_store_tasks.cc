// PostgresStore (postgres_store.h): tasks, created a chunk at a time and claimed with FOR UPDATE
// SKIP LOCKED, their leases and uploads (counted per server in round_shards), and the refused
// uploads counted.
#include "server/store/postgres_store.h"

#include <libpq-fe.h>

#include <utility>

#include "core/error.h"
#include "server/store/postgres_rows.h"
#include "server/store/postgres_statement.h"
#include "server/store/store_rules.h"

namespace fedleaf::server {

template <class Body>
void PostgresStore::side_transaction(Body&& body) {
  pg_exec(side_.conn, "BEGIN");  // synchronous_commit is off for the session
  try {
    body();
    pg_exec(side_.conn, "COMMIT");
  } catch (...) {
    PQclear(PQexec(side_.conn, "ROLLBACK"));
    throw;
  }
}

// ---- tasks and leases

std::optional<ClaimedTask> PostgresStore::lease_task(const ClaimRequest& r) {
  // One statement: pick the task, insert its lease, point the task at it. A task another server
  // is leasing is skipped, not waited for; never-leased tasks (lease_expires_at 0) come first. The
  // order is tasks_to_lease's; the round's check, the pause and the client token (paused or
  // revoked on another server) are one probe each: the first unlocked entry is the task, no sort.
  Rows rows = run(
      "WITH picked AS MATERIALIZED (SELECT t.id FROM tasks t WHERE t.population_id = $1 AND "
      "t.round = $2 AND t.kind = $3 AND t.state = 'leased' AND t.lease_expires_at <= $4 AND "
      "EXISTS (SELECT 1 FROM rounds r WHERE r.population_id = $1 AND r.number = $2 AND r.status "
      "= 'open') AND NOT EXISTS (SELECT 1 FROM populations p WHERE p.id = $1 AND p.paused <> 0) "
      "AND ($8 = '' OR EXISTS (SELECT 1 FROM client_tokens c WHERE c.population_id = $1 AND "
      "c.token_hash = $8 AND c.revoked_at = 0)) "
      "ORDER BY t.lease_expires_at, t.id LIMIT 1 FOR UPDATE OF t SKIP LOCKED), "
      "lease AS (INSERT INTO leases (task_id, token_hash, expires_at, client_key) SELECT id, $5, "
      "$6, $7 FROM picked RETURNING id, task_id) "
      "UPDATE tasks SET lease_id = lease.id, lease_expires_at = $6 FROM lease WHERE tasks.id = "
      "lease.task_id RETURNING tasks.id, lease.id",
      Params()
          .text(r.population_id)
          .integer(r.round)
          .text(to_string(r.kind))
          .real(r.now)
          .text(r.lease_token_hash)
          .real(r.lease_expires_at)
          .text(r.max_client_tasks > 0 ? r.client_key : std::string())
          .text(r.client_token_hash));
  if (rows.size() == 0) return std::nullopt;
  return ClaimedTask{rows.int64(0, 0), rows.int64(0, 1)};
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
  if (r.max_client_tasks > 0) {
    // Claims of one key wait for each other's transactions (the lock is held until this one
    // ends), across servers, and the count is a statement of its own, so its snapshot is taken
    // after the lock: it sees every lease a claim of the key committed before.
    run("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        Params().text("fedleaf client " + r.population_id + " " + r.client_key));
    if (count_client_tasks(r.population_id, r.client_key, r.now).held >= r.max_client_tasks) {
      return std::nullopt;
    }
  }
  std::optional<ClaimedTask> claimed = lease_task(r);
  // A chunk of tasks at once, committed at once on the side connection (never leased, they are
  // any server's to lease; a claim that rolls back leaves them): one wait for the round row per
  // chunk, and no round row locked until this server's batch commits.
  if (!claimed && create_task_chunk(r)) claimed = lease_task(r);
  return claimed;
}

// The task row is locked by the UPDATE until the batch commits, like a claim's.
void PostgresStore::release_lease(std::int64_t task_id, std::int64_t lease_id, double now) {
  Rows released =
      run("UPDATE tasks SET lease_expires_at = $1 WHERE id = $2 AND lease_id = $3 AND state = "
          "'leased' AND lease_expires_at > $1 RETURNING id",
          Params().real(now).integer(task_id).integer(lease_id));
  if (released.size() == 0) return;
  run("UPDATE leases SET expires_at = $1 WHERE id = $2", Params().real(now).integer(lease_id));
}

std::optional<TaskRecord> PostgresStore::find_task(std::int64_t id) {
  static const std::string sql = select_from(column_list(kTasksTable), "tasks WHERE id = $1");
  Rows rows = run(sql.c_str(), Params().integer(id));
  if (rows.size() == 0) return std::nullopt;
  return read_task(rows, 0);
}

std::optional<RoundRecord> PostgresStore::shard_of(const char* sql, const Params& key) {
  Rows rows = run(sql, key);
  if (rows.size() == 0) return std::nullopt;
  return read_shard(rows, 0, 0);
}

std::optional<RoundRecord> PostgresStore::count_train_report(const std::string& population_id,
                                                             int number, const RoundDelta& d) {
  // One statement: this store's shard row of an open round gains the report (its lock taken as
  // in count_report), and the round with every shard is read from the statement's snapshot —
  // before the increment, as count_report reads it, so the sums are added in the same order.
  // A closer that held the shard row deleted it when it closed the round: then nothing is
  // updated, as when the row does not exist yet or the round is closed.
  static const std::string sql =
      "WITH mine AS (UPDATE round_shards s SET reports = s.reports + 1, examples = s.examples + "
      "$4, loss_sum = s.loss_sum + $5, accuracy_sum = s.accuracy_sum + $6, accuracy_examples = "
      "s.accuracy_examples + $7, upload_bytes = s.upload_bytes + $8 FROM rounds o WHERE "
      "s.population_id = $1 AND s.round = $2 AND s.shard = $3 AND o.population_id = $1 AND "
      "o.number = $2 AND o.status = 'open' RETURNING 1) " +
      rounds_with_shards("r.population_id = $1 AND r.number = $2 AND EXISTS (SELECT 1 FROM mine)");
  std::vector<RoundRecord> rounds =
      read_rounds_with_shards(run(sql.c_str(), Params()
                                                   .text(population_id)
                                                   .integer(number)
                                                   .integer(shard_)
                                                   .real(d.examples)
                                                   .real(d.loss_sum)
                                                   .real(d.accuracy_sum)
                                                   .real(d.accuracy_examples)
                                                   .integer(d.upload_bytes)));
  if (rounds.empty()) return std::nullopt;
  apply_delta(rounds.front(), TaskKind::kTrain, d);
  return std::move(rounds.front());
}

std::optional<RoundRecord> PostgresStore::count_report(const std::string& population_id, int number,
                                                       TaskKind kind, const RoundDelta& delta) {
  const bool train = kind == TaskKind::kTrain;
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
    if (!create_shard(population_id, number, train)) return std::nullopt;
    locked_shard = shard_of(shard_sql, shard_key);
    if (!locked_shard) throw Error("postgres store: the shard row just created is missing");
  }
  RoundRecord shard = std::move(*locked_shard);
  std::optional<RoundRecord> round = find_round(population_id, number);
  if (!round) throw NotFound("round " + std::to_string(number) + " is missing");
  if (train && round->status != RoundStatus::kOpen) return std::nullopt;
  apply_delta(shard, kind, delta);
  apply_delta(*round, kind, delta);
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
  return round;
}

std::optional<RoundRecord> PostgresStore::lock_and_count_train_report(const AcceptRequest& r,
                                                                      TaskRecord& task) {
  // count_train_report's statement with the task's lock (taken first: the shard row's key is
  // read from the locked row, by an init plan run before the update's scan) and
  // classify_upload's kAccepted as its condition: a report of a task whose row another server
  // changed since its unlocked read (state, lease, expiry) counts nothing here, and the general
  // path tells what happened from the locked row.
  static const std::string sql =
      "WITH t AS MATERIALIZED (" +
      select_from(column_list(kTasksTable),
                  "tasks WHERE id = $1 AND kind = 'train' AND state = 'leased' AND lease_id = $2 "
                  "AND lease_expires_at > $3 FOR UPDATE") +
      "), mine AS (UPDATE round_shards s SET reports = s.reports + 1, examples = s.examples + "
      "$5, loss_sum = s.loss_sum + $6, accuracy_sum = s.accuracy_sum + $7, accuracy_examples = "
      "s.accuracy_examples + $8, upload_bytes = s.upload_bytes + $9 FROM rounds o WHERE "
      "s.population_id = (SELECT population_id FROM t) AND s.round = (SELECT round FROM t) AND "
      "s.shard = $4 AND o.population_id = s.population_id AND o.number = s.round AND o.status = "
      "'open' RETURNING 1) " +
      rounds_with_shards(
          "r.population_id = (SELECT population_id FROM t) AND r.number = (SELECT round FROM t) "
          "AND EXISTS (SELECT 1 FROM mine)",
          ", " + qualified_columns(kTasksTable, "t"), "t, ");
  Rows rows = run(sql.c_str(), Params()
                                   .integer(r.task_id)
                                   .integer(r.lease_id)
                                   .real(r.now)
                                   .integer(shard_)
                                   .real(r.delta.examples)
                                   .real(r.delta.loss_sum)
                                   .real(r.delta.accuracy_sum)
                                   .real(r.delta.accuracy_examples)
                                   .integer(r.delta.upload_bytes));
  if (rows.size() == 0) return std::nullopt;
  task = read_task(rows, 0, static_cast<int>(kRoundsTable.columns.size()) + kShardCounterColumns);
  RoundRecord round = std::move(read_rounds_with_shards(rows).front());
  apply_delta(round, TaskKind::kTrain, r.delta);
  return round;
}

AcceptOutcome PostgresStore::accept_result(const AcceptRequest& r) {
  AcceptOutcome out;
  // A train report of a task still leased under its lease, to this store's shard row of the
  // task's open round (every report of a synchronous round here but the first): one statement.
  std::optional<RoundRecord> round;
  if (!r.fold_round) round = lock_and_count_train_report(r, out.task);
  if (round) {
    out.status = AcceptStatus::kAccepted;
  } else {
    static const std::string task_sql =
        select_from(column_list(kTasksTable), "tasks WHERE id = $1 FOR UPDATE");
    Rows rows = run(task_sql.c_str(), Params().integer(r.task_id));
    if (rows.size() == 0) throw NotFound("task " + std::to_string(r.task_id) + " does not exist");
    out.task = read_task(rows, 0);
    out.status = classify_upload(out.task, r);
    if (out.status != AcceptStatus::kAccepted) return out;
  }
  const std::string& population_id = out.task.population_id;
  const int number = r.fold_round.value_or(out.task.round);
  const bool train = out.task.kind == TaskKind::kTrain;
  // A buffered train report to this store's shard row of its open version takes one statement
  // more; the rest (the row missing, the round closed, evaluate reports with their metric sums)
  // the general path, which tells them apart.
  if (!round && train && r.fold_round) round = count_train_report(population_id, number, r.delta);
  if (!round) round = count_report(population_id, number, out.task.kind, r.delta);
  if (!round) {  // a train report to a closed round
    out.status = AcceptStatus::kRoundClosed;
    return out;
  }
  complete_task(out.task, r, round->reports);
  Params done = Params()
                    .integer(out.task.id)
                    .text(to_string(out.task.state))
                    .integer(out.task.completed_lease_id)
                    .text(out.task.result_sha256)
                    .integer(out.task.result_status)
                    .text(out.task.result_body);
  if (train) {
    // The result and the task's completion in one statement; seq from result_seq.
    Rows inserted = run(
        "WITH result AS (INSERT INTO results (population_id, round, seq, task_id, bytes) VALUES "
        "($7, $8, nextval('result_seq'), $1, $9) RETURNING seq) UPDATE tasks SET state = $2, "
        "completed_lease_id = $3, result_sha256 = $4, result_status = $5, result_body = $6 "
        "FROM result WHERE id = $1 RETURNING result.seq",
        done.text(population_id).integer(number).blob(r.train_bytes));
    if (inserted.size() == 0)
      throw Error("postgres store: task " + std::to_string(r.task_id) + " vanished");
    out.seq = inserted.int64(0, 0);
  } else {
    run("UPDATE tasks SET state = $2, completed_lease_id = $3, result_sha256 = $4, "
        "result_status = $5, result_body = $6 WHERE id = $1",
        done);
  }
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
  // One index probe per kind (tasks_to_lease's prefix is population, round, kind, state): with
  // `kind IN (…)` the planner took tasks_by_state instead and walked every population's leases.
  Rows rows = run(
      leased_before
          ? "SELECT 1 WHERE EXISTS (SELECT 1 FROM tasks WHERE population_id = $1 AND round = $2 "
            "AND kind = 'train' AND state = 'leased' AND lease_expires_at <= $3 AND lease_id "
            "<> 0) OR EXISTS (SELECT 1 FROM tasks WHERE population_id = $1 AND round = $2 AND "
            "kind = 'evaluate' AND state = 'leased' AND lease_expires_at <= $3 AND lease_id <> "
            "0)"
          : "SELECT 1 WHERE EXISTS (SELECT 1 FROM tasks WHERE population_id = $1 AND round = $2 "
            "AND kind = 'train' AND state = 'leased' AND lease_expires_at <= $3) OR EXISTS "
            "(SELECT 1 FROM tasks WHERE population_id = $1 AND round = $2 AND kind = "
            "'evaluate' AND state = 'leased' AND lease_expires_at <= $3)",
      Params().text(population_id).integer(round).real(now));
  return rows.size() > 0;
}

std::optional<double> PostgresStore::next_lease_expiry(const std::string& population_id, int round,
                                                       double now) {
  Rows rows =
      // Per kind, so that each min is the first entry of an index range (see leasable_rows).
      run("SELECT least((SELECT min(lease_expires_at) FROM tasks WHERE population_id = $1 AND "
          "round = $2 AND kind = 'train' AND state = 'leased' AND lease_expires_at > $3), (SELECT "
          "min(lease_expires_at) FROM tasks WHERE population_id = $1 AND round = $2 AND kind = "
          "'evaluate' AND state = 'leased' AND lease_expires_at > $3))",
          Params().text(population_id).integer(round).real(now));
  if (rows.size() == 0 || rows.is_null(0, 0)) return std::nullopt;
  return rows.real(0, 0);
}

std::int64_t PostgresStore::count_out_tasks(const std::string& population_id, TaskKind kind,
                                            double now) {
  Rows rows =
      run("SELECT count(*) FROM tasks WHERE population_id = $1 AND kind = $2 AND state = 'leased' "
          "AND lease_expires_at > $3",
          Params().text(population_id).text(std::string(to_string(kind))).real(now));
  return rows.int64(0, 0);
}

ClientTasks PostgresStore::count_client_tasks(const std::string& population_id,
                                              const std::string& client_key, double now) {
  // `client_key <> ''` as leases_by_client's WHERE says it, so the partial index serves.
  Rows rows = run(
      "SELECT count(*), min(l.expires_at) FROM leases l JOIN tasks t ON t.id = l.task_id WHERE "
      "l.client_key = $1 AND l.client_key <> '' AND l.expires_at > $2 AND t.lease_id = l.id AND "
      "t.state = 'leased' AND t.population_id = $3",
      Params().text(client_key).real(now).text(population_id));
  ClientTasks out{rows.int64(0, 0), std::nullopt};
  if (out.held > 0) out.next_expiry = rows.real(0, 1);
  return out;
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

std::optional<TaskWithLeases> PostgresStore::find_task_with_leases(std::int64_t id) {
  static const std::string sql = task_with_leases();
  Rows rows = run(sql.c_str(), Params().integer(id));
  if (rows.size() == 0) return std::nullopt;
  TaskWithLeases out{read_task(rows, 0), {}};
  const int first = static_cast<int>(kTasksTable.columns.size());
  for (int i = 0; i < rows.size(); ++i) {
    if (rows.is_null(i, first)) continue;
    out.leases.push_back({rows.int64(i, first), rows.int64(i, first + 1), rows.text(i, first + 2),
                          rows.real(i, first + 3)});
  }
  return out;
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
