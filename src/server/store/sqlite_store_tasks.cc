// SqliteStore (sqlite_store.h): tasks, their leases and uploads, and the refused uploads counted.
#include "server/store/sqlite_store.h"

#include <sqlite3.h>

#include <utility>

#include "core/error.h"
#include "server/store/sqlite_rows.h"
#include "server/store/sqlite_statement.h"
#include "server/store/store_rules.h"

namespace fedleaf::server {

// ---- tasks and leases

std::optional<ClaimedTask> SqliteStore::claim_task(const ClaimRequest& r) {
  const char* kind = to_string(r.kind);
  // One writer: the count and the lease below are one step for every connection.
  if (r.max_client_tasks > 0 &&
      count_client_tasks(r.population_id, r.client_key, r.now).held >= r.max_client_tasks) {
    return std::nullopt;
  }
  {
    // The pause, and the client token when the claim names one, in one read.
    auto admitted = statement(
        "SELECT paused = 0 AND (? = '' OR EXISTS (SELECT 1 FROM client_tokens WHERE "
        "population_id = ? AND token_hash = ? AND revoked_at = 0)) FROM populations WHERE id = ?");
    admitted.bind(1, r.client_token_hash)
        .bind(2, r.population_id)
        .bind(3, r.client_token_hash)
        .bind(4, r.population_id);
    if (admitted.step() && admitted.int64(0) == 0) return std::nullopt;
  }
  std::int64_t task_id = 0;
  {
    auto s = statement(
        "SELECT id FROM tasks WHERE population_id = ? AND round = ? AND kind = ? "
        "AND state = 'leased' AND lease_expires_at <= ? ORDER BY lease_expires_at, id LIMIT 1");
    s.bind(1, r.population_id).bind(2, r.round).bind(3, kind).bind(4, r.now);
    if (s.step()) task_id = s.int64(0);
  }
  if (task_id == 0) {
    const char* count_sql =
        r.kind == TaskKind::kTrain
            ? "UPDATE rounds SET train_tasks = train_tasks + 1 WHERE population_id = ? AND "
              "number = ? AND status = 'open' AND train_tasks < ?"
            : "UPDATE rounds SET eval_tasks = eval_tasks + 1 WHERE population_id = ? AND "
              "number = ? AND status = 'open' AND eval_tasks < ?";
    statement(count_sql).bind(1, r.population_id).bind(2, r.round).bind(3, r.limit).run();
    if (sqlite3_changes(db_) == 0) return std::nullopt;
    statement(
        "INSERT INTO tasks (population_id, round, kind, state, lease_id, lease_expires_at, "
        "completed_lease_id, result_sha256, result_status, result_body) "
        "VALUES (?, ?, ?, 'leased', 0, 0, 0, '', 0, '')")
        .bind(1, r.population_id)
        .bind(2, r.round)
        .bind(3, kind)
        .run();
    task_id = sqlite3_last_insert_rowid(db_);
  } else if (!lock_open_round(r.population_id, r.round)) {
    return std::nullopt;
  }
  // The key only under a bound (what it is for): a lease without one writes no leases_by_client
  // entry.
  statement("INSERT INTO leases (task_id, token_hash, expires_at, client_key) VALUES (?, ?, ?, ?)")
      .bind(1, task_id)
      .bind(2, r.lease_token_hash)
      .bind(3, r.lease_expires_at)
      .bind(4, r.max_client_tasks > 0 ? r.client_key : std::string())
      .run();
  const std::int64_t lease_id = sqlite3_last_insert_rowid(db_);
  statement("UPDATE tasks SET lease_id = ?, lease_expires_at = ? WHERE id = ?")
      .bind(1, lease_id)
      .bind(2, r.lease_expires_at)
      .bind(3, task_id)
      .run();
  return ClaimedTask{task_id, lease_id};
}

void SqliteStore::release_lease(std::int64_t task_id, std::int64_t lease_id, double now) {
  statement(
      "UPDATE tasks SET lease_expires_at = ? WHERE id = ? AND lease_id = ? AND state = 'leased' "
      "AND lease_expires_at > ?")
      .bind(1, now)
      .bind(2, task_id)
      .bind(3, lease_id)
      .bind(4, now)
      .run();
  if (sqlite3_changes(db_) == 0) return;
  statement("UPDATE leases SET expires_at = ? WHERE id = ?").bind(1, now).bind(2, lease_id).run();
}

std::optional<TaskRecord> SqliteStore::find_task(std::int64_t id) {
  static const std::string sql =
      std::string("SELECT ") + column_list(kTasksTable) + " FROM tasks WHERE id = ?";
  auto s = statement(sql.c_str());
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_task(s);
}

void SqliteStore::update_task(const TaskRecord& t) {
  // Every column after the task's identity (id, population_id, round, kind).
  static const std::string sql =
      "UPDATE tasks SET " + assignments_sql(kTasksTable, 4, Dialect::kSqlite) + " WHERE id = ?";
  const std::vector<Value> values = values_of(t);
  auto s = statement(sql.c_str());
  s.bind(bind_values(s, values, 1, 4), t.id);
  s.run();
}

AcceptOutcome SqliteStore::accept_result(const AcceptRequest& r) {
  AcceptOutcome out;
  std::optional<TaskRecord> task = find_task(r.task_id);
  if (!task) throw NotFound("task " + std::to_string(r.task_id) + " does not exist");
  out.status = classify_upload(*task, r);
  out.task = std::move(*task);
  if (out.status != AcceptStatus::kAccepted) return out;
  std::optional<RoundRecord> round =
      find_round(out.task.population_id, r.fold_round.value_or(out.task.round));
  if (!round) throw NotFound("the round of task " + std::to_string(r.task_id) + " is missing");
  const bool train = out.task.kind == TaskKind::kTrain;
  if (train && round->status != RoundStatus::kOpen) {
    out.status = AcceptStatus::kRoundClosed;
    return out;
  }
  apply_delta(*round, out.task.kind, r.delta);
  update_round(*round);
  if (train) {
    statement(
        "INSERT INTO results (population_id, round, seq, task_id, bytes) VALUES (?, ?, ?, ?, ?)")
        .bind(1, round->population_id)
        .bind(2, round->number)
        .bind(3, static_cast<std::int64_t>(round->reports))
        .bind(4, r.task_id)
        .bind_blob(5, r.train_bytes)
        .run();
  }
  complete_task(out.task, r, round->reports);
  update_task(out.task);
  if (train) out.seq = round->reports;
  out.round = std::move(*round);
  return out;
}

// Every task SQLite creates is leased at once.
bool SqliteStore::has_leasable_task(const std::string& population_id, int round, double now) {
  return has_expired_lease(population_id, round, now);
}

bool SqliteStore::has_expired_lease(const std::string& population_id, int round, double now) {
  auto s = statement(
      "SELECT 1 FROM tasks WHERE population_id = ? AND round = ? AND kind IN ('train', "
      "'evaluate') AND state = 'leased' AND lease_expires_at <= ? LIMIT 1");
  s.bind(1, population_id).bind(2, round).bind(3, now);
  return s.step();
}

std::optional<double> SqliteStore::next_lease_expiry(const std::string& population_id, int round,
                                                     double now) {
  auto s = statement(
      "SELECT min(lease_expires_at) FROM tasks WHERE population_id = ? AND round = ? AND "
      "kind IN ('train', 'evaluate') AND state = 'leased' AND lease_expires_at > ?");
  s.bind(1, population_id).bind(2, round).bind(3, now);
  if (!s.step() || s.is_null(0)) return std::nullopt;
  return s.real(0);
}

std::int64_t SqliteStore::count_out_tasks(const std::string& population_id, TaskKind kind,
                                          double now) {
  auto s = statement(
      "SELECT count(*) FROM tasks WHERE population_id = ? AND kind = ? AND state = 'leased' AND "
      "lease_expires_at > ?");
  s.bind(1, population_id).bind(2, std::string(to_string(kind))).bind(3, now);
  s.step();
  return s.int64(0);
}

ClientTasks SqliteStore::count_client_tasks(const std::string& population_id,
                                            const std::string& client_key, double now) {
  // `client_key <> ''` as leases_by_client's WHERE says it, so the partial index serves.
  auto s = statement(
      "SELECT count(*), min(l.expires_at) FROM leases l JOIN tasks t ON t.id = l.task_id WHERE "
      "l.client_key = ? AND l.client_key <> '' AND l.expires_at > ? AND t.lease_id = l.id AND "
      "t.state = 'leased' AND t.population_id = ?");
  s.bind(1, client_key).bind(2, now).bind(3, population_id);
  s.step();
  ClientTasks out{s.int64(0), std::nullopt};
  if (out.held > 0) out.next_expiry = s.real(1);
  return out;
}

std::int64_t SqliteStore::count_active_leases(double now) {
  auto s = statement("SELECT count(*) FROM tasks WHERE state = 'leased' AND lease_expires_at > ?");
  s.bind(1, now);
  s.step();
  return s.int64(0);
}

std::vector<LeaseRecord> SqliteStore::list_leases(std::int64_t task_id) {
  auto s = statement(
      "SELECT id, task_id, token_hash, expires_at FROM leases WHERE task_id = ? ORDER BY id");
  s.bind(1, task_id);
  std::vector<LeaseRecord> out;
  while (s.step()) out.push_back({s.int64(0), s.int64(1), s.text(2), s.real(3)});
  return out;
}

// ---- rejections

bool SqliteStore::add_rejection(const RefusedUpload& upload) {
  if (upload.lease_id != 0) {
    statement("UPDATE leases SET refused_sha256 = ? WHERE id = ? AND refused_sha256 <> ?")
        .bind(1, upload.result_sha256)
        .bind(2, upload.lease_id)
        .bind(3, upload.result_sha256)
        .run();
    if (sqlite3_changes(db_) == 0) return false;
  }
  statement(
      "INSERT INTO rejections (population_id, reason, count) VALUES (?, ?, 1) "
      "ON CONFLICT (population_id, reason) DO UPDATE SET count = count + 1")
      .bind(1, upload.population_id)
      .bind(2, upload.reason)
      .run();
  return true;
}

std::map<std::string, std::int64_t> SqliteStore::rejections(const std::string& population_id) {
  auto s = statement("SELECT reason, count FROM rejections WHERE population_id = ?");
  s.bind(1, population_id);
  std::map<std::string, std::int64_t> out;
  while (s.step()) out[s.text(0)] = s.int64(1);
  return out;
}
}  // namespace fedleaf::server
