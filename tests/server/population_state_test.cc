// PopulationState helpers: plans per task kind, model decoding, accumulator sizing, and the state
// of a new population.
#include "server/repository/population_state.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <utility>

#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "server/util/server_errors.h"
#include "server/util/sha256.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {

TEST_CASE("plan_with_kind_sets_the_kind_and_keeps_the_rest", "[population_state]") {
  const auto plan = nlohmann::json::parse(plan_with_kind(test::kTestPlan, "evaluate"));
  CHECK(plan["kind"] == "evaluate");
  CHECK(plan["updates"].contains("emb/weight"));
}

TEST_CASE("decode_model_reads_safetensors_and_rejects_garbage", "[population_state]") {
  CHECK(decode_model(test::test_model_bytes()).size() == 3);
  CHECK_THROWS_AS(decode_model("garbage"), InvalidInput);
}

TEST_CASE("expected_reports_is_the_round_size_at_least_one", "[population_state]") {
  PopulationRecord record;
  record.settings.clients_per_round = 0;
  CHECK(expected_reports(record) == 1);
  record.settings.clients_per_round = 40;
  CHECK(expected_reports(record) == 40);
}

TEST_CASE("new_population_state_opens_round_zero_with_its_model", "[population_state]") {
  const PopulationRecord record = test::test_population_record("p", test::kTestPlan);
  RoundRecord round0;
  auto plan = std::make_shared<const core::UpdatePlan>(core::parse_update_plan(record.plan_json));
  core::RoundAggregator aggregator(*plan, test::test_model_tensors(), 1);

  const auto st = new_population_state(record, round0, "etag", test::test_model_bytes(), plan,
                                       std::move(aggregator));

  CHECK(st->model.etag == "etag");
  CHECK(*st->model.bytes == test::test_model_bytes());
  CHECK(nlohmann::json::parse(st->train_plan_json)["kind"] == "train");
  CHECK(nlohmann::json::parse(st->eval_plan_json)["kind"] == "evaluate");
  REQUIRE(st->aggregator);
  CHECK(st->aggregator->num_reports() == 0);
}

// Population "p" at round 1 in memory, its round 0 model stored as `stored_model0` under the
// ETag of "bytes0".
std::unique_ptr<PopulationState> state_at_round1(Store& store, const std::string& stored_model0) {
  const PopulationRecord record = test::test_population_record("p", test::kTestPlan);
  RoundRecord round0;
  round0.population_id = "p";
  store.create_population(record, round0, {"p", 0, sha256_hex("bytes0"), stored_model0});
  auto plan = std::make_shared<const core::UpdatePlan>(core::parse_update_plan(record.plan_json));
  RoundRecord round1 = round0;
  round1.number = 1;
  return new_population_state(record, round1, "etag1", test::test_model_bytes(), plan,
                              core::RoundAggregator(*plan, test::test_model_tensors(), 1));
}

TEST_CASE("published_model_is_the_current_one_or_the_stored_one_of_an_earlier_round",
          "[population_state]") {
  SqliteStore store(":memory:");
  auto st = state_at_round1(store, "bytes0");

  PublishedModel current = find_published_model(store, *st, 1);
  REQUIRE(current.current() != nullptr);
  CHECK(current.load().etag == "etag1");
  PublishedModel stored = find_published_model(store, *st, 0);
  CHECK(stored.current() == nullptr);
  const ModelBlob earlier = stored.load();
  CHECK(earlier.etag == sha256_hex("bytes0"));
  CHECK(*earlier.bytes == "bytes0");
  CHECK_THROWS_AS(find_published_model(store, *st, 2), NotFound);
  CHECK_THROWS_AS(find_published_model(store, *st, -1), NotFound);
}

TEST_CASE("published_model_of_an_earlier_round_whose_bytes_do_not_hash_to_its_etag_is_unavailable",
          "[population_state]") {
  SqliteStore store(":memory:");
  auto st = state_at_round1(store, "bytes0 damaged");

  PublishedModel stored = find_published_model(store, *st, 0);
  CHECK_THROWS_AS(stored.load(), Unavailable);
}

// The read happens in load(), not under the caller's lock: a model file damaged between the two
// is caught by load(); one that cannot be read at all is 503 too.
TEST_CASE("published_model_of_an_earlier_round_is_read_when_loaded", "[population_state]") {
  SqliteFileBackend backend;
  SqliteStore store(backend.path);
  std::unique_ptr<PopulationState> st;
  {
    StoreTransaction tx(store, Durability::kFull);
    st = state_at_round1(store, "bytes0");
    tx.commit();
  }
  const std::string file = backend.path + "-models/" + sha256_hex("bytes0") + ".safetensors";

  PublishedModel found = find_published_model(store, *st, 0);
  std::filesystem::remove(file);
  CHECK_THROWS_WITH(found.load(), Catch::StartsWith("population 'p': the stored model of round 0 "
                                                    "cannot be read (model files: cannot open"));
  std::ofstream(file) << "bytes0";
  CHECK(*find_published_model(store, *st, 0).load().bytes == "bytes0");
}

TEST_CASE("select_index_of_the_current_model_is_built_once", "[population_state]") {
  const PopulationRecord record = test::test_population_record("p", test::kTestPlan);
  auto plan = std::make_shared<const core::UpdatePlan>(core::parse_update_plan(record.plan_json));
  auto st = new_population_state(record, RoundRecord{}, "etag", test::test_model_bytes(), plan,
                                 core::RoundAggregator(*plan, test::test_model_tensors(), 1));
  const auto first = current_select_index(*st);
  const auto again = current_select_index(*st);
  CHECK(first == again);
  CHECK(first->arrays.count("emb/weight") == 1);
  CHECK(select_index_of(test::test_model_bytes()) != first);
  CHECK(select_index_of(test::test_model_bytes())->arrays.count("emb/weight") == 1);
}

}  // namespace fedleaf::server

namespace fedleaf::server {
namespace {

// A SqliteStore (a second connection to a file) that lets another server commit once, between
// a load's read of the round and its read of the round's results — the interleaving a shared
// store allows — and says it is shared or not.
class InterleavedStore : public SqliteStore {
 public:
  InterleavedStore(const std::string& path, bool shared, std::function<void()> between)
      : SqliteStore(path), shared_(shared), between_(std::move(between)) {}
  bool shared() const override { return shared_; }
  std::vector<ResultRecord> list_results(const std::string& population_id, int round,
                                         std::int64_t after_seq) override {
    if (between_) std::exchange(between_, nullptr)();
    return SqliteStore::list_results(population_id, round, after_seq);
  }

 private:
  bool shared_;
  std::function<void()> between_;
};

// A population "p" (2 rounds of `clients` reports) with one accepted report and a second task
// leased, on a file store; upload_second() uploads the second task's result through the writing
// server (with 2 clients that closes round 0, dropping its results) and commits it.
struct OneReportAndOneLeased {
  SqliteFileBackend file;  // a temporary file, removed with it
  SqliteStore writer{file.path};
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo{writer, clock, metrics, {}};
  TaskAssignment second;
  explicit OneReportAndOneLeased(int clients) {
    const CreatedPopulation p = repo.create_population(test::test_spec("p", 2, clients, clients));
    const auto first = std::get<TaskAssignment>(repo.claim(p.id, p.client_token));
    second = std::get<TaskAssignment>(repo.claim(p.id, p.client_token));
    repo.upload(first.task_id, first.lease_token, test::train_result({1}, 0.5f, 0.1f, 3));
    repo.commit_batch();
  }
  void upload_second() {
    repo.upload(second.task_id, second.lease_token, test::train_result({2}, 0.25f, 0.2f, 4));
    repo.commit_batch();
  }
};

}  // namespace

TEST_CASE("a_load_another_servers_commit_made_inconsistent_is_read_again_on_a_shared_store",
          "[population_state]") {
  OneReportAndOneLeased stored(2);
  int commits_between = 0;
  InterleavedStore reader(stored.file.path, true, [&] {
    stored.upload_second();
    ++commits_between;
  });

  const auto st = load_population_state_consistently(reader, *reader.find_population("p"));

  CHECK(commits_between == 1);
  CHECK(st->round.number == 1);  // read again: round 1, opened in between
  CHECK(st->round.reports == 0);
  REQUIRE(st->aggregator);
  CHECK(st->aggregator->num_reports() == 0);
}

TEST_CASE("a_load_whose_results_include_a_report_committed_after_its_round_read_holds_it",
          "[population_state]") {
  OneReportAndOneLeased stored(3);
  InterleavedStore reader(stored.file.path, true, [&] { stored.upload_second(); });

  const auto st = load_population_state_consistently(reader, *reader.find_population("p"));

  CHECK(st->round.reports == 1);  // as read before the commit; the next refresh re-reads it
  REQUIRE(st->aggregator);
  CHECK(st->aggregator->num_reports() == 2);
}

TEST_CASE("a_load_that_does_not_add_up_on_a_store_one_server_owns_fails", "[population_state]") {
  OneReportAndOneLeased stored(2);
  InterleavedStore reader(stored.file.path, false, [&] { stored.upload_second(); });

  CHECK_THROWS_AS(load_population_state_consistently(reader, *reader.find_population("p")), Error);
}

}  // namespace fedleaf::server
