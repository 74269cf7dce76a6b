// The binds and row readers generated from the column tables (store_tables.h): every column
// carries its own field — by name, and written and read back through each backend — so that a
// column missing or two swapped fail here.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "server/store/store.h"
#include "server/store/store_tables.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

// Every field a value of its own (no two columns of a record alike).
PopulationRecord population() {
  PopulationRecord p;
  p.id = "pop-columns";
  p.plan_json = "{\"plan\": 1}";
  p.client_token_hash = "hash-columns";
  p.settings.rounds = 7;
  p.settings.clients_per_round = 11;
  p.settings.min_reports = 3;
  p.settings.round_deadline_s = 61.25;
  p.settings.lease_s = 5.5;
  p.settings.train_tasks_per_round = 13;
  p.settings.eval_tasks_per_round = 2;
  p.state = RunState::kRunning;
  p.current_round = 0;
  p.created_at = 1700000000.125;
  p.settings.server_optimizer_json = "{\"type\":\"adam\"}";
  p.settings.buffered_json = "{\"buffer_size\":4}";
  p.settings.max_tasks_per_client = 17;
  p.paused = true;
  p.finish_reason = "reason-columns";
  p.tokens_epoch = 6000000000LL;
  p.settings.privacy_json = "privacy-columns";
  return p;
}

RoundRecord round(int number) {
  RoundRecord r;
  r.population_id = "pop-columns";
  r.number = number;
  r.status = RoundStatus::kOpen;
  r.started_at = 101.5;
  r.deadline = 162.25;
  r.closed_at = 0;
  r.train_tasks = 17;
  r.eval_tasks = 19;
  r.reports = 23;
  r.examples = 29.5;
  r.loss_sum = 31.75;
  r.accuracy_sum = 37.125;
  r.accuracy_examples = 41.5;
  r.upload_bytes = 5000000000LL;
  r.eval_reports = 43;
  r.eval_examples = 47.25;
  r.eval_sums_json = "{\"accuracy\":3.5}";
  r.robust_json = "{}";
  return r;
}

void check_population(const PopulationRecord& a, const PopulationRecord& b) {
  CHECK(a.id == b.id);
  CHECK(a.plan_json == b.plan_json);
  CHECK(a.client_token_hash == b.client_token_hash);
  CHECK(a.settings.rounds == b.settings.rounds);
  CHECK(a.settings.clients_per_round == b.settings.clients_per_round);
  CHECK(a.settings.min_reports == b.settings.min_reports);
  CHECK(a.settings.round_deadline_s == b.settings.round_deadline_s);
  CHECK(a.settings.lease_s == b.settings.lease_s);
  CHECK(a.settings.train_tasks_per_round == b.settings.train_tasks_per_round);
  CHECK(a.settings.eval_tasks_per_round == b.settings.eval_tasks_per_round);
  CHECK(a.state == b.state);
  CHECK(a.current_round == b.current_round);
  CHECK(a.created_at == b.created_at);
  CHECK(a.settings.server_optimizer_json == b.settings.server_optimizer_json);
  CHECK(a.settings.buffered_json == b.settings.buffered_json);
  CHECK(a.settings.max_tasks_per_client == b.settings.max_tasks_per_client);
  CHECK(a.paused == b.paused);
  CHECK(a.finish_reason == b.finish_reason);
  CHECK(a.tokens_epoch == b.tokens_epoch);
  CHECK(a.settings.privacy_json == b.settings.privacy_json);
}

void check_round(const RoundRecord& a, const RoundRecord& b) {
  CHECK(a.population_id == b.population_id);
  CHECK(a.number == b.number);
  CHECK(a.status == b.status);
  CHECK(a.started_at == b.started_at);
  CHECK(a.deadline == b.deadline);
  CHECK(a.closed_at == b.closed_at);
  CHECK(a.train_tasks == b.train_tasks);
  CHECK(a.eval_tasks == b.eval_tasks);
  CHECK(a.reports == b.reports);
  CHECK(a.examples == b.examples);
  CHECK(a.loss_sum == b.loss_sum);
  CHECK(a.accuracy_sum == b.accuracy_sum);
  CHECK(a.accuracy_examples == b.accuracy_examples);
  CHECK(a.upload_bytes == b.upload_bytes);
  CHECK(a.eval_reports == b.eval_reports);
  CHECK(a.eval_examples == b.eval_examples);
  CHECK(a.eval_sums_json == b.eval_sums_json);
  CHECK(a.robust_json == b.robust_json);
}

void check_task(const TaskRecord& a, const TaskRecord& b) {
  CHECK(a.id == b.id);
  CHECK(a.population_id == b.population_id);
  CHECK(a.round == b.round);
  CHECK(a.kind == b.kind);
  CHECK(a.state == b.state);
  CHECK(a.lease_id == b.lease_id);
  CHECK(a.lease_expires_at == b.lease_expires_at);
  CHECK(a.completed_lease_id == b.completed_lease_id);
  CHECK(a.result_sha256 == b.result_sha256);
  CHECK(a.result_status == b.result_status);
  CHECK(a.result_body == b.result_body);
}

// The value each column must carry, by the column's name, written out by hand.
std::string shown(const Value& v) {
  switch (v.kind) {
    case ValueKind::kText:
      return "text:" + v.text;
    case ValueKind::kInteger:
      return "int:" + std::to_string(v.integer);
    case ValueKind::kReal:
      return "real:" + std::to_string(v.real);
  }
  return "";
}

void check_named(const Table& table, const std::vector<Value>& values,
                 const std::map<std::string, std::string>& expected) {
  REQUIRE(values.size() == table.columns.size());
  REQUIRE(expected.size() == table.columns.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    INFO(table.columns[i].name);
    CHECK(values[i].kind == table.columns[i].kind);
    CHECK(shown(values[i]) == expected.at(table.columns[i].name));
  }
}

}  // namespace

TEST_CASE("each_column_binds_its_own_field_and_reads_it_back", "[store_tables]") {
  const PopulationRecord p = population();
  check_named(kPopulationsTable, values_of(p),
              {{"id", "text:pop-columns"},
               {"plan_json", "text:{\"plan\": 1}"},
               {"client_token_hash", "text:hash-columns"},
               {"rounds", "int:7"},
               {"clients_per_round", "int:11"},
               {"min_reports", "int:3"},
               {"round_deadline_s", "real:" + std::to_string(61.25)},
               {"lease_s", "real:" + std::to_string(5.5)},
               {"train_tasks_per_round", "int:13"},
               {"eval_tasks_per_round", "int:2"},
               {"state", "text:running"},
               {"current_round", "int:0"},
               {"created_at", "real:" + std::to_string(1700000000.125)},
               {"server_optimizer", "text:{\"type\":\"adam\"}"},
               {"buffered", "text:{\"buffer_size\":4}"},
               {"max_tasks_per_client", "int:17"},
               {"paused", "int:1"},
               {"finish_reason", "text:reason-columns"},
               {"tokens_epoch", "int:6000000000"},
               {"privacy", "text:privacy-columns"}});
  check_population(population_from(values_of(p)), p);

  const RoundRecord r = round(4);
  check_named(kRoundsTable, values_of(r),
              {{"population_id", "text:pop-columns"},
               {"number", "int:4"},
               {"status", "text:open"},
               {"started_at", "real:" + std::to_string(101.5)},
               {"deadline", "real:" + std::to_string(162.25)},
               {"closed_at", "real:" + std::to_string(0.0)},
               {"train_tasks", "int:17"},
               {"eval_tasks", "int:19"},
               {"reports", "int:23"},
               {"examples", "real:" + std::to_string(29.5)},
               {"loss_sum", "real:" + std::to_string(31.75)},
               {"accuracy_sum", "real:" + std::to_string(37.125)},
               {"accuracy_examples", "real:" + std::to_string(41.5)},
               {"upload_bytes", "int:5000000000"},
               {"eval_reports", "int:43"},
               {"eval_examples", "real:" + std::to_string(47.25)},
               {"eval_sums_json", "text:{\"accuracy\":3.5}"},
               {"robust_json", "text:{}"}});
  check_round(round_from(values_of(r)), r);

  TaskRecord t;
  t.id = 9000000000LL;
  t.population_id = "pop-columns";
  t.round = 3;
  t.kind = TaskKind::kEvaluate;
  t.state = TaskState::kDone;
  t.lease_id = 53;
  t.lease_expires_at = 59.5;
  t.completed_lease_id = 61;
  t.result_sha256 = "sha-columns";
  t.result_status = 201;
  t.result_body = "{\"ok\":true}";
  check_named(kTasksTable, values_of(t),
              {{"id", "int:9000000000"},
               {"population_id", "text:pop-columns"},
               {"round", "int:3"},
               {"kind", "text:evaluate"},
               {"state", "text:done"},
               {"lease_id", "int:53"},
               {"lease_expires_at", "real:" + std::to_string(59.5)},
               {"completed_lease_id", "int:61"},
               {"result_sha256", "text:sha-columns"},
               {"result_status", "int:201"},
               {"result_body", "text:{\"ok\":true}"}});
  check_task(task_from(values_of(t)), t);
}

FEDLEAF_STORE_CASE(store_writes_and_reads_back_every_column_of_each_record,
                   FEDLEAF_STORE_BACKENDS) {
  const PopulationRecord p = population();
  const RoundRecord r0 = round(0);
  {
    StoreTransaction tx(store, Durability::kFull);
    store.create_population(p, r0, {p.id, 0, "etag-0", "model-0"});
    tx.commit();
  }
  const auto found = store.find_population(p.id);
  REQUIRE(found);
  check_population(*found, p);
  const auto found_round = store.find_round(p.id, 0);
  REQUIRE(found_round);
  check_round(*found_round, r0);

  // A claim's task, read back through the generated reader (the population resumed: a paused
  // one leases nothing).
  std::optional<ClaimedTask> claimed;
  {
    StoreTransaction tx(store, Durability::kNormal);
    REQUIRE(store.set_paused(p.id, false));
    claimed = store.claim_task({p.id, 0, TaskKind::kTrain, 100, 120.5, 125.75, "lease-hash"});
    tx.commit();
  }
  REQUIRE(claimed);
  const auto task = store.find_task(claimed->task_id);
  REQUIRE(task);
  TaskRecord expected;
  expected.id = claimed->task_id;
  expected.population_id = p.id;
  expected.round = 0;
  expected.kind = TaskKind::kTrain;
  expected.state = TaskState::kLeased;
  expected.lease_id = claimed->lease_id;
  expected.lease_expires_at = 125.75;
  check_task(*task, expected);

  // The close rewrites every column after the round's key and inserts the next round whole.
  RoundCloseWrite close;
  StoreTransaction tx(store, Durability::kFull);
  const auto locked = store.lock_open_round(p.id, 0);
  REQUIRE(locked);
  close.closed = *locked;
  close.closed.status = RoundStatus::kClosed;
  close.closed.closed_at = 170.5;
  close.closed.robust_json = "{\"capped\":2}";
  close.population = p;
  close.population.current_round = 1;
  close.opened = round(1);
  close.model = ModelRecord{p.id, 1, "etag-1", "model-1"};
  store.close_round(close);
  tx.commit();
  const auto closed = store.find_round(p.id, 0);
  REQUIRE(closed);
  check_round(*closed, close.closed);
  const auto opened = store.find_round(p.id, 1);
  REQUIRE(opened);
  check_round(*opened, *close.opened);
}

}  // namespace fedleaf::server
