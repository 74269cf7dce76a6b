#include "server/store/postgres_rows.h"

#include "server/store/store_rules.h"

namespace fedleaf::server {

PopulationRecord read_population(const PgRows& s, int i) {
  PopulationRecord p;
  p.id = s.text(i, 0);
  p.plan_json = s.text(i, 1);
  p.client_token_hash = s.text(i, 2);
  p.settings.rounds = s.int32(i, 3);
  p.settings.clients_per_round = s.int32(i, 4);
  p.settings.min_reports = s.int32(i, 5);
  p.settings.round_deadline_s = s.real(i, 6);
  p.settings.lease_s = s.real(i, 7);
  p.settings.train_tasks_per_round = s.int32(i, 8);
  p.settings.eval_tasks_per_round = s.int32(i, 9);
  p.state = parse_run_state(s.text(i, 10));
  p.current_round = s.int32(i, 11);
  p.created_at = s.real(i, 12);
  return p;
}

RoundRecord read_round(const PgRows& s, int i) {
  RoundRecord r;
  r.population_id = s.text(i, 0);
  r.number = s.int32(i, 1);
  r.status = parse_round_status(s.text(i, 2));
  r.started_at = s.real(i, 3);
  r.deadline = s.real(i, 4);
  r.closed_at = s.real(i, 5);
  r.train_tasks = s.int32(i, 6);
  r.eval_tasks = s.int32(i, 7);
  r.reports = s.int32(i, 8);
  r.examples = s.real(i, 9);
  r.loss_sum = s.real(i, 10);
  r.accuracy_sum = s.real(i, 11);
  r.accuracy_examples = s.real(i, 12);
  r.upload_bytes = s.int64(i, 13);
  r.eval_reports = s.int32(i, 14);
  r.eval_examples = s.real(i, 15);
  r.eval_sums_json = s.text(i, 16);
  r.robust_json = s.text(i, 17);
  return r;
}

void add_round_fields(PgParams& p, const RoundRecord& r) {
  p.text(to_string(r.status))
      .real(r.started_at)
      .real(r.deadline)
      .real(r.closed_at)
      .integer(r.train_tasks)
      .integer(r.eval_tasks)
      .integer(r.reports)
      .real(r.examples)
      .real(r.loss_sum)
      .real(r.accuracy_sum)
      .real(r.accuracy_examples)
      .integer(r.upload_bytes)
      .integer(r.eval_reports)
      .real(r.eval_examples)
      .text(r.eval_sums_json)
      .text(r.robust_json);
}

TaskRecord read_task(const PgRows& s, int i) {
  TaskRecord t;
  t.id = s.int64(i, 0);
  t.population_id = s.text(i, 1);
  t.round = s.int32(i, 2);
  t.kind = parse_task_kind(s.text(i, 3));
  t.state = parse_task_state(s.text(i, 4));
  t.lease_id = s.int64(i, 5);
  t.lease_expires_at = s.real(i, 6);
  t.completed_lease_id = s.int64(i, 7);
  t.result_sha256 = s.text(i, 8);
  t.result_status = s.int32(i, 9);
  t.result_body = s.text(i, 10);
  return t;
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
  constexpr int kFirstShardColumn = 18;
  for (int i = 0; i < rows.size(); ++i) {
    RoundRecord round = read_round(rows, i);
    if (out.empty() || out.back().number != round.number) out.push_back(std::move(round));
    if (!rows.is_null(i, kFirstShardColumn)) {
      add_round_counts(out.back(), read_shard(rows, i, kFirstShardColumn));
    }
  }
  return out;
}

std::string rounds_with_shards(const char* where) {
  return std::string(
             "SELECT r.population_id, r.number, r.status, r.started_at, r.deadline, r.closed_at, "
             "r.train_tasks, r.eval_tasks, r.reports, r.examples, r.loss_sum, r.accuracy_sum, "
             "r.accuracy_examples, r.upload_bytes, r.eval_reports, r.eval_examples, "
             "r.eval_sums_json, r.robust_json, s.reports, s.examples, s.loss_sum, "
             "s.accuracy_sum, s.accuracy_examples, s.upload_bytes, s.eval_reports, "
             "s.eval_examples, s.eval_sums_json FROM rounds r LEFT JOIN round_shards s ON "
             "s.population_id = r.population_id AND s.round = r.number WHERE ") +
         where + " ORDER BY r.number, s.shard";
}

}  // namespace fedleaf::server
