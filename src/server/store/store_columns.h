#pragma once
// The column lists both store backends select and insert, in the one order their row readers
// (sqlite_rows.h, postgres_rows.h) read: a column added to a table is added here once.
//
//   "SELECT " + std::string(kTaskColumns) + " FROM tasks WHERE id = ?"

namespace fedleaf::server {

constexpr const char* kPopulationColumns =
    "id, plan_json, client_token_hash, rounds, clients_per_round, min_reports, round_deadline_s, "
    "lease_s, train_tasks_per_round, eval_tasks_per_round, state, current_round, created_at";

constexpr const char* kRoundColumns =
    "population_id, number, status, started_at, deadline, closed_at, train_tasks, eval_tasks, "
    "reports, examples, loss_sum, accuracy_sum, accuracy_examples, upload_bytes, eval_reports, "
    "eval_examples, eval_sums_json, robust_json";

constexpr const char* kTaskColumns =
    "id, population_id, round, kind, state, lease_id, lease_expires_at, completed_lease_id, "
    "result_sha256, result_status, result_body";

}  // namespace fedleaf::server
