// A private population through TaskRepository: its rounds publish the model plus the noised sum
// of the clipped updates over the fixed denominator (every row noised), the same after a restart,
// with ε in the status and /metrics, and no round past the budget.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/privacy/dp_ftrl_accountant.h"
#include "core/privacy/tree_noise.h"
#include "core/wire/safetensors.h"
#include "server/api/wire_json.h"
#include "server/repository/private_round.h"
#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "server/util/sha256.h"
#include "tests/server/repository_harness.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

using test::TrainUpload;

constexpr double kNoise = 0.7;
constexpr double kClip = 0.05;
constexpr double kDelta = 1e-5;

PrivacySpec test_privacy(double max_epsilon = 1e6) {
  PrivacySpec p;
  p.noise_multiplier = kNoise;
  p.clip_norm = kClip;
  p.delta = kDelta;
  p.max_epsilon = max_epsilon;
  p.max_participations = 2;
  p.min_separation = 0;
  return p;
}

PopulationSpec private_spec(int rounds, int clients_per_round, const PrivacySpec& privacy) {
  PopulationSpec spec = test::test_spec("p", rounds, clients_per_round, clients_per_round);
  spec.settings.privacy_json = privacy_spec_json(privacy);
  return spec;
}

// A leaf's update as the test's upload helper writes it, densely in float64: emb/weight [10, 2]
// (the listed rows filled with row_value), out/weight [3, 2] (all dense_value).
std::map<std::string, std::vector<double>> dense_update(const TrainUpload& u) {
  std::map<std::string, std::vector<double>> out;
  out["emb/weight"].assign(20, 0.0);
  for (std::int64_t r : u.rows) {
    for (int d = 0; d < 2; ++d) out["emb/weight"][r * 2 + d] += double(u.row_value);
  }
  out["out/weight"].assign(6, double(u.dense_value));
  return out;
}

// The reference of the model a private round publishes, written out: each update clipped to
// kClip over both tensors in float64 and truncated toward zero to whole grid units, summed,
// plus the tree noise of tree round `tree_round` on every row, times grid / clients_per_round,
// added to the old model in F32; out/bias (not in the updates) unchanged.
std::map<std::string, std::vector<float>> reference_model(
    const std::map<std::string, std::vector<float>>& old_model,
    const std::vector<TrainUpload>& uploads, int clients_per_round,
    const core::TreeNoiseSecret& secret, std::uint64_t tree_round) {
  const core::GridGaussian gaussian(kNoise * kClip);
  const double grid = gaussian.grid();
  std::map<std::string, std::vector<std::int64_t>> units{
      {"emb/weight", std::vector<std::int64_t>(20)}, {"out/weight", std::vector<std::int64_t>(6)}};
  for (const TrainUpload& u : uploads) {
    const auto dense = dense_update(u);
    double squared = 0;
    for (const auto& [name, values] : dense) {
      for (double v : values) squared += v * v;
    }
    const double norm = std::sqrt(squared);
    const double scale = norm > kClip ? kClip / norm : 1.0;
    for (const auto& [name, values] : dense) {
      for (std::size_t i = 0; i < values.size(); ++i) {
        units[name][i] += static_cast<std::int64_t>(std::trunc(values[i] * scale / grid));
      }
    }
  }
  const core::TreeNoise noise = core::TreeNoise::for_round(secret, gaussian, tree_round);
  std::map<std::string, std::vector<float>> out = old_model;
  std::uint32_t ordinal = 0;  // tensors in name order
  for (auto& [name, sum] : units) {
    const std::size_t rows = name == "emb/weight" ? 10 : 3;
    for (std::size_t row = 0; row < rows; ++row) noise.add_to_row(ordinal, row, &sum[row * 2], 2);
    for (std::size_t i = 0; i < sum.size(); ++i) {
      const auto delta = static_cast<float>(static_cast<double>(sum[i]) * grid / clients_per_round);
      out[name][i] = out[name][i] + delta;
    }
    ++ordinal;
  }
  return out;
}

const std::vector<TrainUpload> kRound0 = {
    {{1}, 0.5f, 0.25f, 3}, {{1, 2}, -0.001f, 0.002f, 1}, {{9}, 2.0f, -0.5f, 2}};
const std::vector<TrainUpload> kRound1 = {{{4}, 0.01f, -0.01f, 1}, {{0, 5}, 1.0f, 1.0f, 7}};

// A train task for a device enrolled for it: a private population admits enrolled devices only,
// each within its participation limits (devices_test.cc tests those; here every report is its
// own device's).
ClaimOutcome claim_as_new_device(TaskRepository& repo, const CreatedPopulation& p) {
  return repo.claim(p.id, p.client_token, 0, repo.enroll_device(p.id, p.client_token).credential);
}

void upload_all(TaskRepository& repo, const CreatedPopulation& p,
                const std::vector<TrainUpload>& uploads) {
  for (const TrainUpload& u : uploads) {
    auto task = std::get<TaskAssignment>(claim_as_new_device(repo, p));
    repo.upload(task.task_id, task.lease_token,
                test::train_result(u.rows, u.row_value, u.dense_value, u.num_examples));
  }
}

double accountant_epsilon(int rounds, std::int64_t after) {
  const core::DpFtrlAccountant accountant({rounds, 2, 0});
  return accountant.epsilon(kNoise, kDelta, after);
}

}  // namespace

TEST_CASE("a_private_round_publishes_the_noised_clipped_sum_over_the_fixed_denominator",
          "[repository][privacy]") {
  RepositoryHarness h;
  const CreatedPopulation p = h.repo.create_population(private_spec(3, 4, test_privacy()));
  const std::string secret_hex = h.store.find_population("p")->privacy_secret;
  CHECK(secret_hex.size() == 64);
  const core::TreeNoiseSecret secret = privacy_secret_of(*h.store.find_population("p"));
  const auto model0 = test::decode_dense(model_of(h.repo, "p", 0));

  // 4 reports, one of them all zero: what the 3 others sum to, divided by 4 all the same.
  std::vector<TrainUpload> four = kRound0;
  four.push_back({{7}, 0.0f, 0.0f, 1});  // an all-zero update: a report, nothing added
  upload_all(h.repo, p, four);
  REQUIRE(h.status(p)["round"] == 1);
  const auto model1 = test::decode_dense(model_of(h.repo, "p", 1));
  CHECK(model1 == reference_model(model0, four, 4, secret, 1));
  // Untouched rows moved too (noise on every row): emb/weight row 3 was sent by nobody.
  CHECK(model1.at("emb/weight")[6] != model0.at("emb/weight")[6]);
  CHECK(model1.at("out/bias") == model0.at("out/bias"));

  // A private round is never checkpointed: nothing un-noised reaches the store but the results.
  CHECK_FALSE(h.store.find_checkpoint("p", 0));
  // The secret is never served.
  CHECK(h.status(p).dump().find(secret_hex) == std::string::npos);
  CHECK(h.repo.status("p").record.privacy_secret.empty());
}

TEST_CASE("a_private_round_publishes_the_same_model_after_a_restart", "[repository][privacy]") {
  const auto run = [](bool restart) {
    SqliteStore store(":memory:");
    FakeClock clock;
    ServerMetrics metrics;
    TaskRepositoryOptions options;
    options.checkpoint_every = 1;  // a non-private round would checkpoint every report
    auto repo = std::make_unique<TaskRepository>(store, clock, metrics, options);
    const CreatedPopulation p = repo->create_population(private_spec(3, 3, test_privacy()));
    upload_all(*repo, p, {kRound0[0], kRound0[1]});
    auto last = std::get<TaskAssignment>(claim_as_new_device(*repo, p));
    if (restart) {
      repo->checkpoint_all();  // what a shutdown does: still no checkpoint of a private round
      repo.reset();
      CHECK_FALSE(store.find_checkpoint("p", 0));
      repo = std::make_unique<TaskRepository>(store, clock, metrics, options);
    }
    const TrainUpload& u = kRound0[2];
    repo->upload(last.task_id, last.lease_token,
                 test::train_result(u.rows, u.row_value, u.dense_value, u.num_examples));
    REQUIRE(status_json(repo->status("p"))["round"] == 1);
    const core::TreeNoiseSecret secret = privacy_secret_of(*store.find_population("p"));
    const auto model0 = test::decode_dense(model_of(*repo, "p", 0));
    const auto model1 = test::decode_dense(model_of(*repo, "p", 1));
    CHECK(model1 == reference_model(model0, kRound0, 3, secret, 1));
    // Round 1 (tree round 2) after a second restart: its noise is round 2's.
    repo.reset();
    repo = std::make_unique<TaskRepository>(store, clock, metrics, options);
    upload_all(*repo, p, {kRound1[0], kRound1[1], kRound0[0]});
    const auto model2 = test::decode_dense(model_of(*repo, "p", 2));
    CHECK(model2 == reference_model(model1, {kRound1[0], kRound1[1], kRound0[0]}, 3, secret, 2));
  };
  run(false);
  run(true);
}

TEST_CASE("a_private_round_closed_in_the_background_releases_noise_drawn_while_it_was_open",
          "[repository][privacy]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  std::ostringstream log;
  auto logger = std::make_shared<spdlog::logger>(
      "noise-ahead-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  logger->set_pattern("%v");
  TaskRepositoryOptions options;
  options.close_in_background = true;
  options.logger = logger;
  TaskRepository repo(store, clock, metrics, options);
  const CreatedPopulation p = repo.create_population(private_spec(3, 3, test_privacy()));
  const core::TreeNoiseSecret secret = privacy_secret_of(*store.find_population("p"));
  const auto model0 = test::decode_dense(model_of(repo, "p", 0));
  upload_all(repo, p, kRound0);
  repo.wait_for_closes();
  const auto model1 = test::decode_dense(model_of(repo, "p", 1));
  CHECK(model1 == reference_model(model0, kRound0, 3, secret, 1));
  // Round 1's noise is drawn as soon as it opens, before any of its reports.
  const std::vector<TrainUpload> round1 = {kRound1[0], kRound1[1], kRound0[2]};
  upload_all(repo, p, round1);
  repo.wait_for_closes();
  CHECK(test::decode_dense(model_of(repo, "p", 2)) ==
        reference_model(model1, round1, 3, secret, 2));
  logger->flush();
  const std::string lines = log.str();
  INFO(lines);
  CHECK(lines.find("round=0 ") != std::string::npos);
  CHECK(lines.find("round=1 ") != std::string::npos);
  CHECK(lines.find("noise=inline") == std::string::npos);
  std::size_t ahead = 0;
  for (std::size_t at = lines.find("noise=ahead"); at != std::string::npos;
       at = lines.find("noise=ahead", at + 1)) {
    ++ahead;
  }
  CHECK(ahead == 2);
  CHECK(lines.find(store.find_population("p")->privacy_secret) == std::string::npos);
}

// The state a kill -9 between a private round's last upload and its close's commit leaves (the
// noise may have been drawn, or even released into a model file, but the close never committed):
// the restarted repository closes the round from its stored results and publishes the reference
// model, whose noise is round 1's from the secret alone. So no close, first or repeated, can
// release another noise for the round's tree nodes.
TEST_CASE("a_private_round_left_unclosed_by_a_crash_publishes_the_reference_at_restart",
          "[repository][privacy]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepositoryOptions background;
  background.close_in_background = true;
  CreatedPopulation p;
  std::map<std::string, std::vector<float>> model0;
  {
    TaskRepository repo(store, clock, metrics, background);
    p = repo.create_population(private_spec(3, 3, test_privacy()));
    model0 = test::decode_dense(model_of(repo, "p", 0));
    upload_all(repo, p, {kRound0[0], kRound0[1]});
    auto last = std::get<TaskAssignment>(claim_as_new_device(repo, p));
    repo.commit_batch();
    repo.wait_for_closes();  // round 1's noise drawn ahead, then lost with the process
    // The last upload's step alone, as the store accepts it (no close follows).
    const TrainUpload& u = kRound0[2];
    const std::string body = test::train_result(u.rows, u.row_value, u.dense_value, u.num_examples);
    AcceptRequest request{
        last.task_id, store.find_task(last.task_id)->lease_id, sha256_hex(body), clock.now(), body,
        {},           [](int) { return std::string("{}"); }};
    request.delta.examples = u.num_examples;
    StoreTransaction tx(store, Durability::kFull);
    REQUIRE(store.accept_result(request).status == AcceptStatus::kAccepted);
    tx.commit();
  }
  const core::TreeNoiseSecret secret = privacy_secret_of(*store.find_population("p"));
  for (const bool in_background : {true, false}) {
    INFO("restarted with close_in_background " << in_background);
    TaskRepository restarted(store, clock, metrics,
                             in_background ? background : TaskRepositoryOptions{});
    restarted.tick();
    restarted.wait_for_closes();
    REQUIRE(status_json(restarted.status("p"))["round"] == 1);
    CHECK(test::decode_dense(model_of(restarted, "p", 1)) ==
          reference_model(model0, kRound0, 3, secret, 1));
  }
}

TEST_CASE("a_private_round_closed_inline_draws_its_noise_at_the_close", "[repository][privacy]") {
  std::ostringstream log;
  auto logger = std::make_shared<spdlog::logger>(
      "noise-inline-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  logger->set_pattern("%v");
  SqliteStore store(":memory:");
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepositoryOptions options;
  options.logger = logger;
  TaskRepository repo(store, clock, metrics, options);
  const CreatedPopulation p = repo.create_population(private_spec(3, 3, test_privacy()));
  upload_all(repo, p, kRound0);
  logger->flush();
  CHECK(log.str().find("noise=inline") != std::string::npos);
}

TEST_CASE("a_private_populations_status_and_metrics_show_the_accountants_epsilon",
          "[repository][privacy]") {
  RepositoryHarness h;
  const CreatedPopulation p = h.repo.create_population(private_spec(3, 3, test_privacy(50)));
  nlohmann::json privacy = h.status(p)["privacy"];
  CHECK(privacy["mechanism"] == "dp_ftrl_tree");
  CHECK(privacy["unit"] == "device");
  CHECK(privacy["noise_multiplier"] == kNoise);
  CHECK(privacy["clip_norm"] == kClip);
  CHECK(privacy["delta"] == kDelta);
  CHECK(privacy["max_epsilon"] == 50.0);
  CHECK(privacy["max_participations"] == 2);
  CHECK(privacy["min_separation"] == 0);
  CHECK(privacy["rounds_released"] == 0);
  CHECK(privacy["epsilon_spent"] == 0.0);
  CHECK(privacy["epsilon_by_round"] == nlohmann::json::array());
  CHECK(privacy["epsilon_at_end"] == accountant_epsilon(3, 3));
  upload_all(h.repo, p, kRound0);
  privacy = h.status(p)["privacy"];
  CHECK(privacy["rounds_released"] == 1);
  CHECK(privacy["epsilon_spent"] == accountant_epsilon(3, 1));
  CHECK(privacy["epsilon_by_round"] == nlohmann::json::array({accountant_epsilon(3, 1)}));
  CHECK(privacy["guarantee"].get<std::string>().find("except with probability δ = 1e-05") !=
        std::string::npos);

  const std::vector<PrivacyEpsilon> epsilons = h.repo.privacy_epsilons();
  REQUIRE(epsilons.size() == 1);
  CHECK(epsilons[0].population_id == "p");
  CHECK(epsilons[0].spent == accountant_epsilon(3, 1));
  CHECK(epsilons[0].planned == accountant_epsilon(3, 3));
  const std::string text = h.metrics.render(0, 0, {{"p", 1.5, 4.25}});
  CHECK(text.find("# TYPE fedleaf_privacy_epsilon_spent gauge\n") != std::string::npos);
  CHECK(text.find("fedleaf_privacy_epsilon_spent{population=\"p\"} 1.5\n") != std::string::npos);
  CHECK(text.find("fedleaf_privacy_epsilon_planned{population=\"p\"} 4.25\n") != std::string::npos);
  CHECK(h.metrics.render(0, 0, {}) == h.metrics.render(0, 0));

  // A population without privacy shows none.
  const CreatedPopulation plain = h.repo.create_population(test::test_spec("q", 2, 1, 1));
  CHECK_FALSE(h.status(plain).contains("privacy"));
  CHECK(h.repo.privacy_epsilons().size() == 1);
}

TEST_CASE("a_private_population_finishes_before_a_round_past_its_budget", "[repository][privacy]") {
  // Stored settings whose run passes the budget (creation over HTTP refuses them): ε after 3
  // rounds fits, after 4 it does not.
  const double budget = (accountant_epsilon(6, 3) + accountant_epsilon(6, 4)) / 2;
  REQUIRE(accountant_epsilon(6, 3) < budget);
  RepositoryHarness h;
  const CreatedPopulation p = h.repo.create_population(private_spec(6, 1, test_privacy(budget)));
  for (const TrainUpload& u : kRound0) upload_all(h.repo, p, {u});
  const nlohmann::json status = h.status(p);
  CHECK(status["state"] == "finished");
  CHECK(status["round"] == 3);
  CHECK(status["finish_reason"].get<std::string>().rfind(
            "privacy budget: round 3 would reach epsilon", 0) == 0);
  CHECK(status["privacy"]["rounds_released"] == 3);
  CHECK(status["privacy"]["epsilon_spent"].get<double>() <= budget);
  CHECK(h.store.find_population("p")->finish_reason == status["finish_reason"]);
  CHECK(h.claim_retry(p).finished);
}

// Servers sharing a store (PostgreSQL; runs when FEDLEAF_TEST_PG_URL is set): each accepts some
// of a private round's reports, the closing one rebuilds the sum from every server's stored
// results, and all publish the reference model (one secret, read from the store by each).
TEST_CASE("servers_sharing_a_store_publish_a_private_rounds_reference_model",
          "[repository][privacy][shared]") {
  PostgresBackend backend;
  std::unique_ptr<Store> first = backend.open();
  if (!first) return;
  FakeClock clock;
  struct Server {
    std::unique_ptr<Store> store;
    ServerMetrics metrics;
    std::unique_ptr<TaskRepository> repo;
  };
  std::vector<std::unique_ptr<Server>> servers;
  for (int i = 0; i < 3; ++i) {
    auto server = std::make_unique<Server>();
    server->store = i == 0 ? std::move(first) : backend.open();
    server->repo = std::make_unique<TaskRepository>(*server->store, clock, server->metrics,
                                                    TaskRepositoryOptions{});
    servers.push_back(std::move(server));
  }
  const auto commit = [](Server& server) {
    server.repo->commit_batch();
    server.store->sync();
  };
  const CreatedPopulation p =
      servers[0]->repo->create_population(private_spec(2, 3, test_privacy()));
  commit(*servers[0]);
  std::vector<TaskAssignment> tasks;
  for (std::size_t i = 0; i < 3; ++i) {
    Server& server = *servers[i];
    ClaimOutcome claimed = claim_as_new_device(*server.repo, p);
    commit(server);
    REQUIRE(std::holds_alternative<TaskAssignment>(claimed));
    tasks.push_back(std::get<TaskAssignment>(claimed));
  }
  for (std::size_t i = 0; i < 3; ++i) {
    Server& server = *servers[(i + 1) % 3];  // uploaded through another server
    const TrainUpload& u = kRound0[i];
    CHECK(server.repo
              ->upload(tasks[i].task_id, tasks[i].lease_token,
                       test::train_result(u.rows, u.row_value, u.dense_value, u.num_examples))
              .status == 201);
    commit(server);
  }
  const core::TreeNoiseSecret secret = privacy_secret_of(*servers[2]->store->find_population("p"));
  const auto model0 = test::decode_dense(model_of(*servers[0]->repo, "p", 0));
  const auto expected = reference_model(model0, kRound0, 3, secret, 1);
  for (auto& server : servers) {
    CHECK(test::decode_dense(model_of(*server->repo, "p", 1)) == expected);
  }
  CHECK_FALSE(servers[0]->store->find_checkpoint("p", 0));
}

}  // namespace fedleaf::server
