// The adagrad server optimizer (server_optimizer/adagrad.cc, FedAdagrad of Reddi et al. 2021)
// against a reference written out here from the paper's rule: a plain per-element loop over
// several rounds that touch random rows (laziness), with and without β1, the closed form of a
// constant delta, the spec's parsing and the state's save/load.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "core/aggregation/server_optimizer/server_optimizer.h"
#include "core/aggregation/updates/update_plan.h"
#include "core/wire/server_optimizer_state.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

using core::DenseTensor;
using core::NamedTensors;
using core::ServerOptimizer;
using core::TensorAggregate;

constexpr std::size_t kRows = 6, kWidth = 3;

core::ServerOptimizerSpec parse(const std::string& text) {
  return core::parse_server_optimizer(nlohmann::json::parse(text), "population.server_optimizer");
}

const float* floats(const NamedTensors& t, const std::string& name) {
  return std::get<DenseTensor>(t.at(name)).data<float>();
}

bool close_to(double got, double want) {
  return std::abs(got - want) <= 1e-6 * (1 + std::abs(want));
}

// One element as the reference keeps it: floats between rounds, f64 within a step.
struct RefElement {
  float x = 0, m = 0, v = 0;
  void step(double eta, double beta1, double eps, float delta) {
    const double m_new = beta1 == 0 ? delta : beta1 * m + (1 - beta1) * delta;
    const double v_new = v + static_cast<double>(delta) * delta;
    x = static_cast<float>(x + eta * m_new / (std::sqrt(v_new) + eps));
    m = static_cast<float>(m_new);
    v = static_cast<float>(v_new);
  }
};

void check_against_reference(const std::string& spec_json, double eta, double beta1, double eps) {
  const ServerOptimizer opt(parse(spec_json));
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  xt::xarray<float> emb = xt::xarray<float>::from_shape({kRows, kWidth});
  for (float& e : emb) e = normal(rng);
  NamedTensors model = {{"emb", DenseTensor(emb)}, {"bias", DenseTensor(xt::xarray<float>{0.5f})}};
  std::vector<RefElement> ref(kRows * kWidth + 1);
  for (std::size_t i = 0; i < kRows * kWidth; ++i) ref[i].x = emb.data()[i];
  ref.back().x = 0.5f;
  NamedTensors state;
  for (int round = 0; round < 8; ++round) {
    std::vector<std::int64_t> rows;
    for (std::size_t r = 0; r < kRows; ++r) {
      if (std::bernoulli_distribution(0.5)(rng)) rows.push_back(static_cast<std::int64_t>(r));
    }
    core::RowIndices ids = core::RowIndices::from_shape({rows.size()});
    xt::xarray<float> values = xt::xarray<float>::from_shape({rows.size(), kWidth});
    for (std::size_t e = 0; e < rows.size(); ++e) {
      ids(e) = rows[e];
      for (std::size_t j = 0; j < kWidth; ++j) {
        values(e, j) = normal(rng);
        ref[static_cast<std::size_t>(rows[e]) * kWidth + j].step(eta, beta1, eps, values(e, j));
      }
    }
    const float bias_delta = normal(rng);
    ref.back().step(eta, beta1, eps, bias_delta);
    std::vector<TensorAggregate> aggregates(2);
    aggregates[0].name = "emb";
    aggregates[0].encoding = core::UpdateEncoding::kRowSparse;
    aggregates[0].delta = core::RowSparseTensor(ids, DenseTensor(std::move(values)),
                                                {static_cast<std::int64_t>(kRows), kWidth});
    aggregates[1].name = "bias";
    aggregates[1].delta = DenseTensor(xt::xarray<float>{bias_delta});
    core::ServerOptimizerStep s = opt.step(model, aggregates, state);
    CHECK(s.withheld_nonfinite == 0);
    model = std::move(s.model);
    state = std::move(s.state);
    for (std::size_t i = 0; i < kRows * kWidth; ++i) {
      INFO("round " << round << " element " << i);
      CHECK(close_to(floats(model, "emb")[i], ref[i].x));
      CHECK(close_to(floats(state, "emb@v")[i], ref[i].v));
      if (beta1 != 0) CHECK(close_to(floats(state, "emb@m")[i], ref[i].m));
    }
    CHECK(close_to(floats(model, "bias")[0], ref.back().x));
    CHECK(close_to(floats(state, "bias@v")[0], ref.back().v));
  }
  CHECK(state.size() == (beta1 == 0 ? 2 : 4));
}

TEST_CASE("server_adagrad_follows_the_reference_over_rounds_lazily") {
  check_against_reference(R"({"type": "adagrad", "learning_rate": 0.2, "epsilon": 0.01})", 0.2, 0,
                          0.01);
}

TEST_CASE("server_adagrad_with_beta1_follows_the_reference") {
  check_against_reference(R"({"type": "adagrad", "learning_rate": 0.1, "beta1": 0.9})", 0.1, 0.9,
                          1e-3);
}

// A constant delta Δ: v_t = t·Δ², so step t moves x by η·Δ/(√t·|Δ| + ε).
TEST_CASE("server_adagrad_matches_the_closed_form_of_a_constant_delta") {
  const ServerOptimizer opt(parse(R"({"type": "adagrad", "learning_rate": 0.5})"));
  std::vector<TensorAggregate> aggregates(1);
  aggregates[0].name = "w";
  aggregates[0].delta = DenseTensor(xt::xarray<double>{0.25, -0.25});
  NamedTensors model = {{"w", DenseTensor(xt::xarray<double>{0.0, 0.0})}}, state;
  double want = 0;
  for (int t = 1; t <= 6; ++t) {
    core::ServerOptimizerStep s = opt.step(model, aggregates, state);
    model = std::move(s.model);
    state = std::move(s.state);
    want += 0.5 * 0.25 / (std::sqrt(t) * 0.25 + 1e-3);
    const double* w = std::get<DenseTensor>(model.at("w")).data<double>();
    CHECK(std::abs(w[0] - want) < 1e-12);
    CHECK(std::abs(w[1] + want) < 1e-12);
  }
}

TEST_CASE("server_adagrad_parses_its_settings_and_refuses_others") {
  const core::ServerOptimizerSpec spec = parse(R"({"type": "adagrad"})");
  CHECK(spec.type() == "adagrad");
  CHECK(spec.setting("learning_rate") == 0.01);
  CHECK(spec.setting("beta1") == 0.0);
  CHECK(spec.setting("epsilon") == 1e-3);
  CHECK(core::server_optimizer_from_text(core::server_optimizer_json(spec), "stored") == spec);
  CHECK_THROWS_MATCHES(parse(R"({"type": "adagrad", "beta2": 0.9})"), InvalidInput,
                       test::MessageContains("unknown field 'beta2'"));
  CHECK_THROWS_MATCHES(parse(R"({"type": "adagrad", "epsilon": 0})"), InvalidInput,
                       test::MessageContains("population.server_optimizer.epsilon: expected a "
                                             "number in (0, 1000000]"));
}

TEST_CASE("server_adagrad_state_saves_and_loads_and_refuses_a_negative_accumulator") {
  const std::string plan_json = R"({"updates": {
    "w": {"encoding": "dense", "aggregator": "weighted_mean"}}})";
  const core::UpdatePlan plan = core::parse_update_plan(plan_json);
  const ServerOptimizer opt(parse(R"({"type": "adagrad"})"));
  std::vector<TensorAggregate> aggregates(1);
  aggregates[0].name = "w";
  aggregates[0].delta = DenseTensor(xt::xarray<float>{0.5f, -1.0f});
  const NamedTensors model = {{"w", DenseTensor(xt::xarray<float>{1.0f, 2.0f})}};
  const core::ServerOptimizerStep s = opt.step(model, aggregates, {});
  const std::vector<std::uint8_t> bytes = opt.save_state(s.state);
  CHECK(opt.load_state(bytes.data(), bytes.size(), plan, s.model) == s.state);
  const NamedTensors negative = {{"w@v", DenseTensor(xt::xarray<float>{0.25f, -1.0f})}};
  const std::vector<std::uint8_t> bad = core::write_server_optimizer_state("adagrad", negative);
  CHECK_THROWS_MATCHES(opt.load_state(bad.data(), bad.size(), plan, s.model), InvalidInput,
                       test::MessageContains("array 'w@v' holds a negative second moment"));
}

}  // namespace
}  // namespace fedleaf
