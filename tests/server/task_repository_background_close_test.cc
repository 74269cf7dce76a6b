// TaskRepository with close_in_background: the upload completing a round returns before the
// close; the close publishes what an inline close publishes, exactly once; a round whose last
// report is stored but whose close never committed (a crash between them) is closed at restart.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/api/wire_json.h"
#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "server/util/server_errors.h"
#include "server/util/sha256.h"
#include "tests/server/server_fixtures.h"

namespace fedleaf::server {
namespace {

using test::test_spec;
using test::train_result;

const std::vector<test::TrainUpload> kUploads = {{{1}, 0.5f, 0.25f, 3}, {{1, 2}, -1.0f, 1.0f, 1}};

std::string body_of(const test::TrainUpload& u) {
  return train_result(u.rows, u.row_value, u.dense_value, u.num_examples);
}

TaskRepositoryOptions background() {
  TaskRepositoryOptions options;
  options.close_in_background = true;
  return options;
}

// The model of round 1 after kUploads close round 0, and the status after it.
std::string round1_model(const TaskRepositoryOptions& options, nlohmann::json* status = nullptr) {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, options);
  const CreatedPopulation p = repo.create_population(test_spec("p", 3, 2, 2));
  for (const auto& u : kUploads) {
    auto task = std::get<TaskAssignment>(repo.claim("p", p.client_token));
    CHECK(repo.upload(task.task_id, task.lease_token, body_of(u)).status == 201);
  }
  repo.wait_for_closes();
  if (status) *status = status_json(repo.status("p"));
  return *repo.model("p", 1).bytes;
}

}  // namespace

TEST_CASE("a_background_close_publishes_the_model_an_inline_close_publishes", "[repository]") {
  nlohmann::json status;
  const std::string background_model = round1_model(background(), &status);

  CHECK(background_model == round1_model({}));
  CHECK(status["round"] == 1);
  CHECK(status["history"][0]["status"] == "closed");
  CHECK(status["history"][0]["reports"] == 2);
  CHECK(status["history"][1]["status"] == "open");
  CHECK(test::models_close(test::decode_dense(background_model),
                           test::reference_next_model(kUploads)));
}

// Whether the close is still running or done, an over-selected task's upload for the round
// that reached its quorum is refused as for a closed round, and the round closes once.
TEST_CASE("a_train_upload_for_a_round_at_its_quorum_gets_410_while_or_after_it_closes",
          "[repository]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, background());
  auto spec = test_spec("p", 3, 1, 1);
  spec.settings.train_tasks_per_round = 2;
  const CreatedPopulation p = repo.create_population(spec);
  auto first = std::get<TaskAssignment>(repo.claim("p", p.client_token));
  auto second = std::get<TaskAssignment>(repo.claim("p", p.client_token));

  CHECK(repo.upload(first.task_id, first.lease_token, body_of(kUploads[0])).status == 201);
  CHECK_THROWS_AS(repo.upload(second.task_id, second.lease_token, body_of(kUploads[1])), Gone);
  repo.wait_for_closes();

  const auto status = status_json(repo.status("p"));
  CHECK(status["round"] == 1);
  CHECK(status["history"][0]["reports"] == 1);
  CHECK(status["rejections"]["round_closed"] == 1);
  CHECK(repo.upload(first.task_id, first.lease_token, body_of(kUploads[0])).status == 200);
}

// The state a crash between an upload's commit and its close's commit leaves: the round's last
// report stored, the round open. The restarted repository's tick closes it from the results.
TEST_CASE("a_round_whose_quorum_is_stored_but_not_closed_is_closed_at_restart", "[repository]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  CreatedPopulation p;
  {
    TaskRepository repo(store, clock, metrics, {});
    p = repo.create_population(test_spec("p", 3, 2, 2));
    auto task = std::get<TaskAssignment>(repo.claim("p", p.client_token));
    repo.upload(task.task_id, task.lease_token, body_of(kUploads[0]));
    auto last = std::get<TaskAssignment>(repo.claim("p", p.client_token));
    repo.commit_batch();
    // The last upload's step alone, as the store accepts it (no close follows).
    const std::string body = body_of(kUploads[1]);
    AcceptRequest request{
        last.task_id, store.find_task(last.task_id)->lease_id, sha256_hex(body), clock.now(), body,
        {},           [](int) { return std::string("{}"); }};
    request.delta.examples = kUploads[1].num_examples;
    StoreTransaction tx(store, Durability::kFull);
    REQUIRE(store.accept_result(request).status == AcceptStatus::kAccepted);
    tx.commit();
  }

  TaskRepository restarted(store, clock, metrics, background());
  restarted.tick();
  restarted.wait_for_closes();

  CHECK(status_json(restarted.status("p"))["round"] == 1);
  CHECK(*restarted.model("p", 1).bytes == round1_model({}));
}

// The close step leaves the round's results (their delete is most of its time, which parked
// claims wait for); scheduling the next round's close drops them in a step of its own.
TEST_CASE("a_background_close_leaves_its_results_until_the_next_rounds_close_is_scheduled",
          "[repository]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, background());
  const CreatedPopulation p = repo.create_population(test_spec("p", 3, 1, 1));
  auto task = std::get<TaskAssignment>(repo.claim("p", p.client_token));
  CHECK(repo.upload(task.task_id, task.lease_token, body_of(kUploads[0])).status == 201);
  repo.wait_for_closes();
  repo.commit_batch();
  REQUIRE(status_json(repo.status("p"))["round"] == 1);
  CHECK(store.list_results("p", 0, 0).size() == 1);

  auto next = std::get<TaskAssignment>(repo.claim("p", p.client_token));
  CHECK(repo.upload(next.task_id, next.lease_token, body_of(kUploads[1])).status == 201);
  repo.wait_for_closes();
  repo.commit_batch();

  CHECK(store.list_results("p", 0, 0).empty());
  CHECK(store.list_results("p", 1, 0).size() == 1);  // round 1's own, left by its close
  CHECK(status_json(repo.status("p"))["round"] == 2);
}

}  // namespace fedleaf::server
