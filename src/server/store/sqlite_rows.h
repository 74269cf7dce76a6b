#pragma once
// How the SQLite store's rows map to records and back: the column lists its statements select,
// the readers of a row and the binder of a round's fields, so that a column is named and read in
// one place. Templates over the statement type (SqliteStatement; tests may pass a fake).
//
//   Statement s = statement(("SELECT " + column_list(kRoundsTable) + " FROM rounds").c_str());
//   while (s.step()) rounds.push_back(read_round(s));

#include "server/store/store.h"
#include "server/store/store_rules.h"
#include "server/store/store_tables.h"

namespace fedleaf::server {
template <class Stmt>
PopulationRecord read_population(const Stmt& s) {
  PopulationRecord p;
  p.id = s.text(0);
  p.plan_json = s.text(1);
  p.client_token_hash = s.text(2);
  p.settings.rounds = s.int32(3);
  p.settings.clients_per_round = s.int32(4);
  p.settings.min_reports = s.int32(5);
  p.settings.round_deadline_s = s.real(6);
  p.settings.lease_s = s.real(7);
  p.settings.train_tasks_per_round = s.int32(8);
  p.settings.eval_tasks_per_round = s.int32(9);
  p.state = parse_run_state(s.text(10));
  p.current_round = s.int32(11);
  p.created_at = s.real(12);
  return p;
}
template <class Stmt>
RoundRecord read_round(const Stmt& s) {
  RoundRecord r;
  r.population_id = s.text(0);
  r.number = s.int32(1);
  r.status = parse_round_status(s.text(2));
  r.started_at = s.real(3);
  r.deadline = s.real(4);
  r.closed_at = s.real(5);
  r.train_tasks = s.int32(6);
  r.eval_tasks = s.int32(7);
  r.reports = s.int32(8);
  r.examples = s.real(9);
  r.loss_sum = s.real(10);
  r.accuracy_sum = s.real(11);
  r.accuracy_examples = s.real(12);
  r.upload_bytes = s.int64(13);
  r.eval_reports = s.int32(14);
  r.eval_examples = s.real(15);
  r.eval_sums_json = s.text(16);
  r.robust_json = s.text(17);
  return r;
}

// Binds the round's non-key fields at positions first..first+15.
template <class Stmt>
void bind_round_fields(Stmt& s, const RoundRecord& r, int first) {
  s.bind(first, to_string(r.status))
      .bind(first + 1, r.started_at)
      .bind(first + 2, r.deadline)
      .bind(first + 3, r.closed_at)
      .bind(first + 4, r.train_tasks)
      .bind(first + 5, r.eval_tasks)
      .bind(first + 6, r.reports)
      .bind(first + 7, r.examples)
      .bind(first + 8, r.loss_sum)
      .bind(first + 9, r.accuracy_sum)
      .bind(first + 10, r.accuracy_examples)
      .bind(first + 11, r.upload_bytes)
      .bind(first + 12, r.eval_reports)
      .bind(first + 13, r.eval_examples)
      .bind(first + 14, r.eval_sums_json)
      .bind(first + 15, r.robust_json);
}
template <class Stmt>
TaskRecord read_task(const Stmt& s) {
  TaskRecord t;
  t.id = s.int64(0);
  t.population_id = s.text(1);
  t.round = s.int32(2);
  t.kind = parse_task_kind(s.text(3));
  t.state = parse_task_state(s.text(4));
  t.lease_id = s.int64(5);
  t.lease_expires_at = s.real(6);
  t.completed_lease_id = s.int64(7);
  t.result_sha256 = s.text(8);
  t.result_status = s.int32(9);
  t.result_body = s.text(10);
  return t;
}

}  // namespace fedleaf::server
