// TaskRepository with a server optimizer (population spec "server_optimizer"): the published
// models follow the optimizer over the rounds' aggregates, the default stays FedAvg byte for
// byte, and the optimizer's state survives a restart (it is stored with each model).
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/aggregation/server_optimizer/server_optimizer.h"
#include "server/api/wire_json.h"
#include "server/repository/task_repository.h"
#include "server/store/sqlite_store.h"
#include "server/util/sha256.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

using test::test_spec;
using test::train_result;

// Two reports per round; rows a row_sparse update changes: those both reports sent
// (min_contributors 2). Round 0 changes row 3, round 1 row 5, round 2 rows 3 and 5 — so row 3
// sits out round 1, and its Adam step count is 2, not 3, in round 2.
const std::vector<std::vector<test::TrainUpload>> kRounds = {
    {{{1, 3}, 0.5f, 0.25f, 3}, {{3, 7}, -1.0f, 1.0f, 1}},
    {{{5, 8}, 0.3f, -0.5f, 2}, {{2, 5}, 0.7f, 0.5f, 2}},
    {{{3, 5}, -0.4f, 0.1f, 1}, {{3, 5}, 0.2f, 0.3f, 4}}};
const std::vector<std::vector<std::size_t>> kRowsChanged = {{3}, {5}, {3, 5}};

PopulationSpec spec_with(const std::string& id, const std::string& optimizer_json) {
  PopulationSpec spec = test_spec(id, static_cast<int>(kRounds.size()), 2, 2);
  spec.settings.server_optimizer_json = optimizer_json;
  return spec;
}

// Runs round `round` of population `p` on `repo`: both reports.
void run_round(TaskRepository& repo, const CreatedPopulation& p, std::size_t round) {
  for (const test::TrainUpload& u : kRounds[round]) {
    const auto task = std::get<TaskAssignment>(repo.claim(p.id, p.client_token));
    REQUIRE(repo.upload(task.task_id, task.lease_token,
                        train_result(u.rows, u.row_value, u.dense_value, u.num_examples))
                .status == 201);
  }
}

struct Harness {
  SqliteStore store{":memory:"};
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo{store, clock, metrics, TaskRepositoryOptions{}};
};

const std::string kAdam = core::server_optimizer_json(
    core::parse_server_optimizer(nlohmann::json::parse(R"({"type": "adam", "learning_rate": 0.1,
        "beta1": 0.8, "beta2": 0.9, "epsilon": 0.001})"),
                                 "test"));

TEST_CASE("an_explicit_fedavg_optimizer_publishes_the_default_populations_bytes",
          "[repository][server_optimizer]") {
  Harness h;
  const CreatedPopulation plain = h.repo.create_population(spec_with("plain", ""));
  const CreatedPopulation sgd = h.repo.create_population(
      spec_with("sgd", R"({"learning_rate":1.0,"momentum":0.0,"type":"sgd"})"));
  for (std::size_t r = 0; r < kRounds.size(); ++r) {
    run_round(h.repo, plain, r);
    run_round(h.repo, sgd, r);
    CHECK(*h.repo.model("sgd", static_cast<int>(r) + 1).bytes ==
          *h.repo.model("plain", static_cast<int>(r) + 1).bytes);
  }
  CHECK(status_json(h.repo.status("plain"))["server_optimizer"] ==
        nlohmann::json::parse(R"({"type": "sgd", "learning_rate": 1.0, "momentum": 0.0})"));
}

// The rounds' aggregates Δ_r are the same in every population fed the same reports (the robust
// rules depend on the reports alone): a FedAvg population publishes m_r + Δ_r, from which the
// reference below runs each optimizer's rule in f64, per key.
TEST_CASE("an_optimizer_population_follows_its_rule_over_the_fedavg_populations_deltas",
          "[repository][server_optimizer]") {
  Harness h;
  const CreatedPopulation fedavg = h.repo.create_population(spec_with("fedavg", ""));
  const std::string momentum = R"({"learning_rate":2.0,"momentum":0.5,"type":"sgd"})";
  const CreatedPopulation sgd = h.repo.create_population(spec_with("sgd", momentum));
  const CreatedPopulation adam = h.repo.create_population(spec_with("adam", kAdam));
  for (std::size_t r = 0; r < kRounds.size(); ++r) {
    for (const CreatedPopulation* p : {&fedavg, &sgd, &adam}) run_round(h.repo, *p, r);
  }
  CHECK(status_json(h.repo.status("adam"))["server_optimizer"]["type"] == "adam");

  const auto models = [&](const std::string& id) {
    std::vector<std::map<std::string, std::vector<float>>> out;
    for (int r = 0; r <= static_cast<int>(kRounds.size()); ++r) {
      out.push_back(test::decode_dense(*h.repo.model(id, r).bytes));
    }
    return out;
  };
  const auto avg = models("fedavg");
  const auto got_sgd = models("sgd");
  const auto got_adam = models("adam");
  for (const std::string name : {"emb/weight", "out/weight"}) {
    const std::size_t width = 2;
    const std::size_t n = avg[0].at(name).size();
    std::vector<double> x_sgd(avg[0].at(name).begin(), avg[0].at(name).end());
    std::vector<double> x_adam = x_sgd, m_sgd(n, 0), m(n, 0), v(n, 0);
    std::vector<int> t(n / width, 0);
    for (std::size_t r = 0; r < kRounds.size(); ++r) {
      for (std::size_t key = 0; key < n / width; ++key) {
        const bool dense = name == "out/weight";
        const auto& rows = kRowsChanged[r];
        if (!dense && std::find(rows.begin(), rows.end(), key) == rows.end()) continue;
        const std::size_t counter = dense ? 0 : key;  // a dense tensor is one key
        if (!dense || key == 0) ++t[counter];
        for (std::size_t j = key * width; j < (key + 1) * width; ++j) {
          const double d =
              static_cast<double>(avg[r + 1].at(name)[j]) - static_cast<double>(avg[r].at(name)[j]);
          m_sgd[j] = 0.5 * m_sgd[j] + d;
          x_sgd[j] += 2.0 * m_sgd[j];
          m[j] = 0.8 * m[j] + 0.2 * d;
          v[j] = 0.9 * v[j] + 0.1 * d * d;
          const double mhat = m[j] / (1 - std::pow(0.8, t[counter]));
          const double vhat = v[j] / (1 - std::pow(0.9, t[counter]));
          x_adam[j] += 0.1 * mhat / (std::sqrt(vhat) + 0.001);
        }
      }
      for (std::size_t j = 0; j < n; ++j) {
        INFO(name << " round " << r + 1 << " element " << j);
        CHECK(got_sgd[r + 1].at(name)[j] == Approx(x_sgd[j]).margin(1e-5));
        CHECK(got_adam[r + 1].at(name)[j] == Approx(x_adam[j]).margin(1e-4));
      }
    }
  }
  // Rows no round changed never moved; out/bias is not in the plan's updates.
  CHECK(got_adam.back().at("emb/weight")[0] == avg[0].at("emb/weight")[0]);
  CHECK(got_adam.back().at("emb/weight")[19] == avg[0].at("emb/weight")[19]);
  CHECK(got_adam.back().at("out/bias") == avg[0].at("out/bias"));
}

// The state is stored with each model: a repository opened again on the store (a restart, at a
// round's start or in the middle of one) continues exactly where the first left off.
TEST_CASE("a_restarted_repository_continues_the_optimizer_state_bit_for_bit",
          "[repository][server_optimizer]") {
  for (const bool background : {false, true}) {
    TaskRepositoryOptions options;
    options.close_in_background = background;
    FakeClock clock;
    ServerMetrics metrics;
    std::vector<std::string> uninterrupted;
    {
      SqliteStore store(":memory:");
      TaskRepository repo(store, clock, metrics, options);
      const CreatedPopulation p = repo.create_population(spec_with("p", kAdam));
      for (std::size_t r = 0; r < kRounds.size(); ++r) {
        run_round(repo, p, r);
        repo.wait_for_closes();
        uninterrupted.push_back(*repo.model("p", static_cast<int>(r) + 1).bytes);
      }
    }
    const SqliteFileBackend backend;
    CreatedPopulation p;
    {
      SqliteStore store(backend.path);
      TaskRepository repo(store, clock, metrics, options);
      p = repo.create_population(spec_with("p", kAdam));
      run_round(repo, p, 0);
      repo.wait_for_closes();
    }
    {  // a restart at round 1's start; then one report, and another restart
      SqliteStore store(backend.path);
      TaskRepository repo(store, clock, metrics, options);
      const test::TrainUpload& u = kRounds[1][0];
      const auto task = std::get<TaskAssignment>(repo.claim(p.id, p.client_token));
      repo.upload(task.task_id, task.lease_token,
                  train_result(u.rows, u.row_value, u.dense_value, u.num_examples));
    }
    {
      SqliteStore store(backend.path);
      TaskRepository repo(store, clock, metrics, options);
      const test::TrainUpload& u = kRounds[1][1];
      const auto task = std::get<TaskAssignment>(repo.claim(p.id, p.client_token));
      repo.upload(task.task_id, task.lease_token,
                  train_result(u.rows, u.row_value, u.dense_value, u.num_examples));
      repo.wait_for_closes();
    }
    SqliteStore store(backend.path);
    TaskRepository repo(store, clock, metrics, options);
    run_round(repo, p, 2);
    repo.wait_for_closes();
    INFO("close_in_background " << background);
    for (std::size_t r = 0; r < kRounds.size(); ++r) {
      CHECK(*repo.model("p", static_cast<int>(r) + 1).bytes == uninterrupted[r]);
    }
    CHECK(store.find_optimizer_state("p", 3));
    CHECK_FALSE(store.find_optimizer_state("p", 2));  // only the latest is kept
  }
}

// A stored state whose bytes are not a state of the plan and model, or that do not hash to their
// ETag (a damaged file), quarantines its population.
TEST_CASE("a_population_whose_stored_optimizer_state_is_damaged_is_quarantined",
          "[repository][server_optimizer]") {
  for (const bool hashes : {true, false}) {
    const SqliteFileBackend backend;
    FakeClock clock;
    ServerMetrics metrics;
    CreatedPopulation p;
    {
      SqliteStore store(backend.path);
      TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
      p = repo.create_population(spec_with("p", kAdam));
      run_round(repo, p, 0);
    }
    {
      SqliteStore store(backend.path);
      StoreTransaction tx(store, Durability::kFull);
      REQUIRE(store.lock_open_round("p", 1));
      RoundCloseWrite write;
      write.closed = *store.find_round("p", 1);
      write.population = *store.find_population("p");
      write.population.current_round = 2;
      write.opened = *store.find_round("p", 1);
      write.opened->number = 2;
      write.opened->reports = 0;
      const std::string bytes = test::test_model_bytes();
      write.model = ModelRecord{"p", 2, sha256_hex(bytes), bytes};
      const std::string state = "not safetensors";
      write.optimizer_state =
          OptimizerStateRecord{"p", 2, hashes ? sha256_hex(state) : sha256_hex("other"), state};
      store.close_round(write);
      tx.commit();
    }
    SqliteStore store(backend.path);
    TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
    const PopulationStatus status = repo.status("p");
    REQUIRE(status.failure_reason);
    INFO("hashes " << hashes);
    CHECK_THAT(*status.failure_reason,
               Catch::Contains(hashes ? "server optimizer state: " : "does not hash to its ETag"));
  }
}

}  // namespace
}  // namespace fedleaf::server
