// "staleness_normalization": "unnormalized" (FedBuff's Algorithm 1): a version steps by
// Σ nᵢ·w(sᵢ)·Δᵢ / Σ nᵢ — with equal example counts Σ w(sᵢ)·Δᵢ / K —, checked against that
// formula computed here from the reports, so a buffer of equally stale reports moves the model
// w(s) times as far as a fresh one. Every backend; the default stays the weighted mean
// (task_repository_buffered_test.cc).
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/aggregation/operators/operator_table.h"
#include "core/aggregation/round/buffered_spec.h"
#include "server/repository/buffered_step.h"
#include "server/repository/task_repository.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

// kTestPlan without clip, example cap or min_contributors: the reference is the bare rule.
const char* kPlainPlan =
    R"({"model": {"inputs": {"tokens": "sparse_ids"},
                  "layers": [{"type": "embedding_bag", "name": "emb", "input": "tokens",
                              "vocab": 10, "dim": 2, "combiner": "mean"},
                             {"type": "dense", "name": "out", "units": 2}],
                  "loss": "softmax_cross_entropy"},
        "train": {"optimizer": {"type": "sgd", "learning_rate": 0.1}, "epochs": 1,
                  "batch_size": 4},
        "max_examples_per_report": "off",
        "updates": {"emb/weight": {"encoding": "row_sparse", "clip": "off",
                                   "aggregator": "mean_over_contributors",
                                   "min_contributors": "off"},
                    "out/weight": {"encoding": "dense", "aggregator": "weighted_mean",
                                   "clip": "off"}}})";

// K = 2, concurrency 4, max_staleness 2, w(s) = 1/sqrt(1+s), unnormalized; 4 versions.
PopulationSpec unnormalized_spec() {
  PopulationSpec spec = test::test_spec("p", 4, 2, 2);
  spec.plan_json = kPlainPlan;
  core::BufferedSpec b;
  b.buffer_size = 2;
  b.concurrency = 4;
  b.max_staleness = 2;
  b.normalization = core::StalenessNormalization::kUnnormalized;
  spec.settings.buffered_json = core::buffered_spec_json(b);
  spec.settings.train_tasks_per_round = 4;
  return spec;
}

TaskAssignment claim(TaskRepository& repo, const CreatedPopulation& p) {
  return std::get<TaskAssignment>(repo.claim(p.id, p.client_token));
}

// A report of `t` whose update is `delta` everywhere (out/weight and emb/weight row 1).
void report(TaskRepository& repo, const TaskAssignment& t, float delta, int examples) {
  REQUIRE(repo.upload(t.task_id, t.lease_token, test::train_result({1}, delta, delta, examples))
              .status == 201);
  repo.commit_batch();  // as the server does before it answers (PostgreSQL batches the close)
}

struct Report {
  double delta;
  int examples;
  int staleness;
};

// The unnormalized FedBuff step, written out: Σ nᵢ·w(sᵢ)·Δᵢ / Σ nᵢ.
double fedbuff_step(const std::vector<Report>& buffer) {
  double moved = 0, examples = 0;
  for (const Report& r : buffer) {
    moved += r.examples * (1.0 / std::sqrt(1.0 + r.staleness)) * r.delta;
    examples += r.examples;
  }
  return moved / examples;
}

// Checks version `v` of "p" is version v − 1 moved by `step` (out/weight and emb/weight row 1).
void check_step(TaskRepository& repo, int v, double step) {
  const auto before = test::decode_dense(*repo.model("p", v - 1).bytes);
  const auto after = test::decode_dense(*repo.model("p", v).bytes);
  for (std::size_t j = 0; j < after.at("out/weight").size(); ++j) {
    CHECK(after.at("out/weight")[j] == Approx(before.at("out/weight")[j] + step).margin(1e-6));
  }
  for (std::size_t j : {2, 3}) {  // row 1 of [10, 2]
    CHECK(after.at("emb/weight")[j] == Approx(before.at("emb/weight")[j] + step).margin(1e-6));
  }
}

}  // namespace

FEDLEAF_STORE_CASE(an_unnormalized_buffer_steps_by_the_staleness_weighted_sum_over_k,
                   FEDLEAF_STORE_BACKENDS) {
  FakeClock clock;
  ServerMetrics metrics;
  TaskRepository repo(store, clock, metrics, TaskRepositoryOptions{});
  const CreatedPopulation p = repo.create_population(unnormalized_spec());
  const TaskAssignment a = claim(repo, p), b = claim(repo, p), c = claim(repo, p),
                       d = claim(repo, p);
  report(repo, a, 0.2f, 2);
  report(repo, b, -0.4f, 2);  // version 1: fresh reports, as the weighted mean
  check_step(repo, 1, fedbuff_step({{0.2, 2, 0}, {-0.4, 2, 0}}));

  const TaskAssignment g = claim(repo, p);  // on version 1
  report(repo, c, 0.6f, 2);
  report(repo, d, 0.3f, 2);  // version 2: both 1 version stale — (w·0.6 + w·0.3) / 2
  check_step(repo, 2, fedbuff_step({{0.6, 2, 1}, {0.3, 2, 1}}));
  CHECK(fedbuff_step({{0.6, 2, 1}, {0.3, 2, 1}}) == Approx(0.45 / std::sqrt(2.0)));

  const TaskAssignment h = claim(repo, p);  // on version 2
  report(repo, g, 0.5f, 1);
  report(repo, h, -0.2f, 3);  // version 3: unequal examples, one stale
  check_step(repo, 3, fedbuff_step({{0.5, 1, 1}, {-0.2, 3, 0}}));
}

TEST_CASE("staleness_scale_is_the_buffers_mean_staleness_weight", "[buffered]") {
  CHECK(staleness_scale(3.0, 4.0) == 0.75);
  CHECK(staleness_scale(0.0, 0.0) == 1.0);  // no reports: nothing to scale
  CHECK(staleness_scale(4.0 + 1e-12, 4.0) == 1.0);
}

TEST_CASE("scale_aggregates_scales_the_weighted_means_alone", "[buffered]") {
  core::UpdatePlan plan;
  const std::vector<std::pair<const char*, core::SparseSumOperator>> ops = {
      {"a", core::SparseSumOperator::kWeightedMean},
      {"b", core::SparseSumOperator::kWeightedMean},
      {"c", core::SparseSumOperator::kWeightedMean},
      {"d", core::SparseSumOperator::kSum}};
  std::vector<core::TensorAggregate> aggregates;
  for (const auto& [name, op] : ops) {
    core::TensorUpdatePlan tensor;
    tensor.name = name;
    tensor.op.op = op;
    plan.tensors.push_back(tensor);
    core::TensorAggregate aggregate;
    aggregate.name = name;
    aggregate.delta = test::dense_f32({2}, [](std::size_t i) { return 1.0 + double(i); });
    aggregates.push_back(aggregate);
  }
  aggregates[1].counts = true;    // a count: a statistic, not a step
  aggregates[2].withheld = true;  // zeros
  scale_aggregates(aggregates, plan, 0.5);
  const auto values = [&](std::size_t k) {
    const auto& t = std::get<core::DenseTensor>(aggregates[k].delta);
    return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
  };
  CHECK(values(0) == std::vector<float>{0.5f, 1.0f});
  CHECK(values(1) == std::vector<float>{1.0f, 2.0f});
  CHECK(values(2) == std::vector<float>{1.0f, 2.0f});
  CHECK(values(3) == std::vector<float>{1.0f, 2.0f});  // sum: unweighted, no staleness in it
}

}  // namespace fedleaf::server
