// Server optimizers (server_optimizer.h): the spec's parsing, each update rule against a
// reference written out here (closed forms, and a plain per-element loop over several rounds),
// laziness on row-sparse and coo tables, and the state's save/load.
#include "core/aggregation/server_optimizer/server_optimizer.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <set>

#include "core/wire/safetensors.h"
#include "core/wire/server_optimizer_state.h"
#include "tests/core/aggregation/aggregation_test_util.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

using core::DenseTensor;
using core::NamedTensors;
using core::ServerOptimizer;
using core::ServerOptimizerSpec;
using core::TensorAggregate;
using core::UpdateEncoding;

DenseTensor random_dense(std::mt19937_64& rng, const core::Shape& shape) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  xt::xarray<float> a = xt::xarray<float>::from_shape(shape);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = normal(rng);
  return DenseTensor(std::move(a));
}

ServerOptimizerSpec parse(const std::string& text) {
  return core::parse_server_optimizer(nlohmann::json::parse(text), "population.server_optimizer");
}

void check_refused(const std::string& text, const std::string& fragment) {
  INFO(text);
  CHECK_THROWS_MATCHES(parse(text), InvalidInput, test::MessageContains(fragment));
}

TEST_CASE("server_optimizer_parse_fills_each_types_defaults") {
  const ServerOptimizerSpec sgd = parse(R"({"type": "sgd"})");
  CHECK(core::is_fedavg(sgd));
  CHECK(sgd == ServerOptimizerSpec{});
  const ServerOptimizerSpec adam = parse(R"({"type": "adam"})");
  CHECK(adam.type() == "adam");
  CHECK(adam.setting("learning_rate") == 0.01);
  CHECK(adam.setting("beta1") == 0.9);
  CHECK(adam.setting("beta2") == 0.99);
  CHECK(adam.setting("epsilon") == 1e-3);
  CHECK(adam.setting("bias_correction") == 1.0);
  CHECK_FALSE(core::is_fedavg(adam));
  const ServerOptimizerSpec m = parse(R"({"type": "sgd", "learning_rate": 0.5, "momentum": 0.9})");
  CHECK(m.setting("learning_rate") == 0.5);
  CHECK(m.setting("momentum") == 0.9);
  CHECK_FALSE(core::is_fedavg(m));
}

TEST_CASE("server_optimizer_json_reads_back_to_the_same_spec") {
  for (const char* text : {R"({"type": "sgd", "learning_rate": 0.7, "momentum": 0.3})",
                           R"({"type": "adam", "learning_rate": 0.03, "beta1": 0.5, "beta2": 0.999,
            "epsilon": 1e-8, "bias_correction": false})"}) {
    const ServerOptimizerSpec spec = parse(text);
    CHECK(core::server_optimizer_from_text(core::server_optimizer_json(spec), "stored") == spec);
  }
  CHECK(core::server_optimizer_from_text("", "stored") == ServerOptimizerSpec{});
}

TEST_CASE("server_optimizer_parse_refuses_a_missing_or_unknown_type") {
  check_refused(R"({"learning_rate": 1})", "population.server_optimizer.type: missing");
  check_refused(
      R"({"type": "yogi"})",
      "population.server_optimizer.type: unknown server optimizer 'yogi' (expected sgd, adam");
  check_refused(R"("adam")", "population.server_optimizer: expected an object");
}

TEST_CASE("server_optimizer_parse_refuses_fields_of_another_type") {
  check_refused(R"({"type": "sgd", "beta1": 0.9})", "unknown field 'beta1'");
  check_refused(R"({"type": "adam", "momentum": 0.9})", "unknown field 'momentum'");
}

TEST_CASE("server_optimizer_parse_refuses_a_learning_rate_out_of_range") {
  check_refused(R"({"type": "sgd", "learning_rate": 0})",
                "population.server_optimizer.learning_rate: expected a number in (0, 1000000]");
  check_refused(R"({"type": "adam", "learning_rate": -0.1})", ".learning_rate: expected");
  check_refused(R"({"type": "sgd", "learning_rate": "1"})", ".learning_rate: expected a number");
}

TEST_CASE("server_optimizer_parse_refuses_a_momentum_out_of_range") {
  check_refused(R"({"type": "sgd", "momentum": 1})",
                "population.server_optimizer.momentum: expected a number in [0, 1), got 1");
  check_refused(R"({"type": "sgd", "momentum": -0.5})", ".momentum: expected a number in [0, 1)");
}

TEST_CASE("server_optimizer_parse_refuses_adam_betas_out_of_range") {
  check_refused(R"({"type": "adam", "beta1": 1.0})", ".beta1: expected a number in [0, 1)");
  check_refused(R"({"type": "adam", "beta2": 1.5})", ".beta2: expected a number in [0, 1)");
  check_refused(R"({"type": "adam", "beta2": -1})", ".beta2: expected a number in [0, 1)");
}

TEST_CASE("server_optimizer_parse_refuses_an_epsilon_out_of_range") {
  check_refused(R"({"type": "adam", "epsilon": 0})", ".epsilon: expected a number in (0, 1000000]");
  check_refused(R"({"type": "adam", "epsilon": 1e7})", ".epsilon: expected a number");
}

TEST_CASE("server_optimizer_parse_refuses_a_bias_correction_that_is_not_a_boolean") {
  check_refused(R"({"type": "adam", "bias_correction": 1})",
                ".bias_correction: expected true or false");
}

// ---- update rules

constexpr std::size_t kRows = 6;
constexpr std::size_t kWidth = 3;

NamedTensors table_model() {
  NamedTensors m;
  xt::xarray<float> emb = xt::xarray<float>::from_shape({kRows, kWidth});
  for (std::size_t i = 0; i < emb.size(); ++i) emb.data()[i] = 0.1f * static_cast<float>(i) - 0.5f;
  m.emplace("emb", DenseTensor(std::move(emb)));
  m.emplace("bias", DenseTensor(xt::xarray<float>{0.25f, -1.0f}));
  m.emplace("frozen", DenseTensor(xt::xarray<float>{7.0f}));
  return m;
}

// A round's aggregate of "emb" over `rows` (sorted), values from `rng`, and of "bias".
std::vector<TensorAggregate> round_aggregates(const std::vector<std::int64_t>& rows,
                                              std::mt19937_64& rng,
                                              std::vector<std::vector<float>>* emb_rows,
                                              std::vector<float>* bias) {
  std::normal_distribution<float> normal(0.0f, 0.3f);
  xt::xarray<float> values = xt::xarray<float>::from_shape({rows.size(), kWidth});
  emb_rows->assign(kRows, {});
  for (std::size_t e = 0; e < rows.size(); ++e) {
    for (std::size_t j = 0; j < kWidth; ++j) values(e, j) = normal(rng);
    (*emb_rows)[static_cast<std::size_t>(rows[e])] = {values(e, 0), values(e, 1), values(e, 2)};
  }
  core::RowIndices indices = core::RowIndices::from_shape({rows.size()});
  for (std::size_t e = 0; e < rows.size(); ++e) indices(e) = rows[e];
  *bias = {normal(rng), normal(rng)};
  std::vector<TensorAggregate> out(2);
  out[0].name = "bias";
  out[0].delta = DenseTensor(xt::xarray<float>{(*bias)[0], (*bias)[1]});
  out[1].name = "emb";
  out[1].encoding = UpdateEncoding::kRowSparse;
  out[1].delta = core::RowSparseTensor(std::move(indices), DenseTensor(std::move(values)),
                                       {static_cast<std::int64_t>(kRows), kWidth});
  return out;
}

const float* floats(const NamedTensors& t, const std::string& name) {
  return std::get<DenseTensor>(t.at(name)).data<float>();
}

bool close_to(double got, double want) {
  return std::abs(got - want) <= 1e-6 * (1 + std::abs(want));
}

// The reference: one key's elements, kept as floats between rounds as the optimizer keeps them.
struct RefKey {
  std::vector<float> x, m, v;
  std::int64_t t = 0;
};

void ref_step(const ServerOptimizerSpec& spec, RefKey& k, const std::vector<float>& d) {
  const double eta = spec.setting("learning_rate");
  if (spec.type() == "sgd") {
    for (std::size_t j = 0; j < d.size(); ++j) {
      const double m = spec.setting("momentum") * k.m[j] + d[j];
      k.x[j] = static_cast<float>(k.x[j] + eta * m);
      k.m[j] = static_cast<float>(m);
    }
    return;
  }
  ++k.t;
  const double b1 = spec.setting("beta1"), b2 = spec.setting("beta2");
  const bool correct = spec.setting("bias_correction") != 0;
  const double c1 = correct ? 1 - std::pow(b1, k.t) : 1;
  const double c2 = correct ? 1 - std::pow(b2, k.t) : 1;
  for (std::size_t j = 0; j < d.size(); ++j) {
    const double m = b1 * k.m[j] + (1 - b1) * d[j];
    const double v = b2 * k.v[j] + (1 - b2) * static_cast<double>(d[j]) * d[j];
    k.x[j] =
        static_cast<float>(k.x[j] + eta * (m / c1) / (std::sqrt(v / c2) + spec.setting("epsilon")));
    k.m[j] = static_cast<float>(m);
    k.v[j] = static_cast<float>(v);
  }
}

// Runs `rounds` rounds through the optimizer and the reference; every round touches a random
// subset of the rows (some none), and checks every element, every moment and every step count,
// and that rows a round did not touch kept their value and state exactly.
void check_against_reference(const ServerOptimizerSpec& spec, int rounds) {
  std::mt19937_64 rng(97);
  const ServerOptimizer opt(spec);
  NamedTensors model = table_model();
  NamedTensors state;
  std::vector<RefKey> ref_rows(kRows);
  for (std::size_t r = 0; r < kRows; ++r) {
    ref_rows[r].x.assign(floats(model, "emb") + r * kWidth,
                         floats(model, "emb") + (r + 1) * kWidth);
    ref_rows[r].m.assign(kWidth, 0.0f);
    ref_rows[r].v.assign(kWidth, 0.0f);
  }
  RefKey ref_bias{{0.25f, -1.0f}, {0, 0}, {0, 0}, 0};
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::int64_t> rows;
    for (std::size_t r = 0; r < kRows; ++r) {
      if (std::bernoulli_distribution(0.4)(rng)) rows.push_back(static_cast<std::int64_t>(r));
    }
    std::vector<std::vector<float>> emb_rows;
    std::vector<float> bias;
    const std::vector<TensorAggregate> aggregates = round_aggregates(rows, rng, &emb_rows, &bias);
    const NamedTensors before_state = state;
    const NamedTensors before_model = model;
    core::ServerOptimizerStep step = opt.step(model, aggregates, state);
    CHECK(step.withheld_nonfinite == 0);
    model = std::move(step.model);
    state = std::move(step.state);
    for (std::size_t r = 0; r < kRows; ++r) {
      if (!emb_rows[r].empty()) ref_step(spec, ref_rows[r], emb_rows[r]);
    }
    ref_step(spec, ref_bias, bias);
    CHECK(std::get<DenseTensor>(model.at("frozen")) ==
          std::get<DenseTensor>(before_model.at("frozen")));
    const bool adam = spec.type() == "adam";
    const std::string m_name = adam ? "@m" : "@momentum";
    for (std::size_t r = 0; r < kRows; ++r) {
      for (std::size_t j = 0; j < kWidth; ++j) {
        INFO("round " << round << " row " << r << " element " << j);
        const std::size_t at = r * kWidth + j;
        CHECK(close_to(floats(model, "emb")[at], ref_rows[r].x[j]));
        CHECK(close_to(floats(state, "emb" + m_name)[at], ref_rows[r].m[j]));
        if (adam) CHECK(close_to(floats(state, "emb@v")[at], ref_rows[r].v[j]));
        if (emb_rows[r].empty()) {  // untouched: value and state exactly as they were
          CHECK(floats(model, "emb")[at] == floats(before_model, "emb")[at]);
          if (!before_state.empty()) {
            CHECK(floats(state, "emb" + m_name)[at] == floats(before_state, "emb" + m_name)[at]);
          }
        }
      }
      if (adam) {
        const auto& steps = std::get<DenseTensor>(state.at("emb@steps"));
        CHECK(steps.data<std::int64_t>()[r] == ref_rows[r].t);
      }
    }
    for (std::size_t j = 0; j < 2; ++j) {
      CHECK(close_to(floats(model, "bias")[j], ref_bias.x[j]));
    }
    if (adam)
      CHECK(std::get<DenseTensor>(state.at("bias@steps")).data<std::int64_t>()[0] == round + 1);
  }
}

TEST_CASE("server_sgd_with_momentum_follows_the_reference_over_rounds_lazily") {
  check_against_reference(parse(R"({"type": "sgd", "learning_rate": 0.7, "momentum": 0.9})"), 12);
}

TEST_CASE("server_adam_follows_the_reference_over_rounds_lazily") {
  check_against_reference(parse(R"({"type": "adam", "learning_rate": 0.05, "beta1": 0.8,
                                   "beta2": 0.95, "epsilon": 1e-4})"),
                          12);
}

TEST_CASE("server_adam_without_bias_correction_follows_the_reference") {
  check_against_reference(parse(R"({"type": "adam", "bias_correction": false})"), 8);
}

// A constant delta Δ for T rounds has closed forms: momentum m_t = Δ(1 − β^t)/(1 − β); Adam with
// bias correction m̂_t = Δ and v̂_t = Δ², so every step is η·Δ/(|Δ| + ε).
TEST_CASE("server_optimizers_match_the_closed_forms_of_a_constant_delta") {
  const double eta = 0.5, beta = 0.6, eps = 1e-3;
  std::vector<TensorAggregate> aggregates(1);
  aggregates[0].name = "bias";
  aggregates[0].delta = DenseTensor(xt::xarray<float>{0.2f, -0.2f});
  const NamedTensors start = {{"bias", DenseTensor(xt::xarray<float>{0.0f, 0.0f})}};
  for (const bool adam : {false, true}) {
    const ServerOptimizer opt(
        parse(adam ? R"({"type": "adam", "learning_rate": 0.5, "epsilon": 0.001})"
                   : R"({"type": "sgd", "learning_rate": 0.5, "momentum": 0.6})"));
    NamedTensors model = start, state;
    double want = 0;
    for (int t = 1; t <= 6; ++t) {
      core::ServerOptimizerStep s = opt.step(model, aggregates, state);
      model = std::move(s.model);
      state = std::move(s.state);
      const double d = static_cast<double>(0.2f);
      want += adam ? eta * d / (d + eps) : eta * d * (1 - std::pow(beta, t)) / (1 - beta);
      INFO((adam ? "adam" : "sgd") << " round " << t);
      CHECK(std::abs(floats(model, "bias")[0] - want) < 1e-5);
      CHECK(std::abs(floats(model, "bias")[1] + want) < 1e-5);
    }
  }
}

TEST_CASE("server_fedavg_step_is_bit_for_bit_the_aggregators_next_model") {
  const std::string plan_json = R"({"updates": {
    "emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
    "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
    "h/weight": {"encoding": "coo", "aggregator": "weighted_mean"},
    "n": {"encoding": "row_sparse", "aggregator": "count"}}})";
  const core::UpdatePlan plan = core::parse_update_plan(plan_json);
  std::mt19937_64 rng(5);
  NamedTensors model;
  model.emplace("emb/weight", random_dense(rng, {40, 4}));
  model.emplace("out/weight", random_dense(rng, {4, 2}));
  model.emplace("h/weight", random_dense(rng, {6, 5}));
  model.emplace("n", DenseTensor::zeros(core::DType::F32, {40, 1}));
  model.emplace("other", random_dense(rng, {3}));
  core::RoundAggregator round(plan, model);
  for (int c = 0; c < 9; ++c) {
    NamedTensors u;
    u.emplace("emb/weight", test::random_update<float>(rng, UpdateEncoding::kRowSparse, {40, 4}));
    u.emplace("out/weight", test::random_update<float>(rng, UpdateEncoding::kDense, {4, 2}));
    u.emplace("h/weight", test::random_update<float>(rng, UpdateEncoding::kCoo, {6, 5}));
    u.emplace("n", test::random_update<float>(rng, UpdateEncoding::kRowSparse, {40, 1}));
    const auto bytes = core::write_safetensors(
        u, {{"kind", "train"}, {"num_examples", std::to_string(c + 1)}, {"loss", "1"}});
    round.add_result(bytes.data(), bytes.size());
  }
  const core::ServerOptimizerStep s =
      ServerOptimizer({}).step(round.model(), round.aggregates(), {});
  CHECK(s.state.empty());
  CHECK(core::write_safetensors(s.model) == core::write_safetensors(round.next_model()));
}

TEST_CASE("server_optimizer_moves_nothing_for_a_withheld_dense_aggregate") {
  std::vector<TensorAggregate> aggregates(1);
  aggregates[0].name = "bias";
  aggregates[0].delta = DenseTensor(xt::xarray<float>{0.0f, 0.0f});
  aggregates[0].withheld = true;
  const ServerOptimizer opt(parse(R"({"type": "adam"})"));
  const NamedTensors model = {{"bias", DenseTensor(xt::xarray<float>{1.0f, 2.0f})}};
  const core::ServerOptimizerStep s = opt.step(model, aggregates, {});
  CHECK(s.model == model);
  CHECK(std::get<DenseTensor>(s.state.at("bias@steps")).data<std::int64_t>()[0] == 0);
  CHECK(floats(s.state, "bias@m")[0] == 0.0f);
}

TEST_CASE("server_optimizer_adds_count_aggregates_as_they_are") {
  std::vector<TensorAggregate> aggregates(1);
  aggregates[0].name = "n";
  aggregates[0].counts = true;
  aggregates[0].encoding = UpdateEncoding::kRowSparse;
  xt::xarray<std::int64_t> three = xt::xarray<std::int64_t>::from_shape({1, 1});
  three.fill(3);
  aggregates[0].delta =
      core::RowSparseTensor(core::RowIndices{1}, DenseTensor(std::move(three)), {3, 1});
  const ServerOptimizer opt(parse(R"({"type": "adam", "learning_rate": 0.001})"));
  xt::xarray<float> ones = xt::xarray<float>::from_shape({3, 1});
  ones.fill(1.0f);
  NamedTensors model;
  model.emplace("n", DenseTensor(std::move(ones)));
  const core::ServerOptimizerStep s = opt.step(model, aggregates, {});
  CHECK(floats(s.model, "n")[1] == 4.0f);
  CHECK(floats(s.model, "n")[0] == 1.0f);
  CHECK(s.state.empty());  // counts keep no moments
}

TEST_CASE("server_optimizer_keeps_an_element_whose_new_value_would_overflow") {
  std::vector<TensorAggregate> aggregates(1);
  aggregates[0].name = "bias";
  aggregates[0].delta = DenseTensor(xt::xarray<float>{3e38f, 1.0f});
  const ServerOptimizer opt(parse(R"({"type": "sgd", "learning_rate": 10, "momentum": 0.5})"));
  const NamedTensors model = {{"bias", DenseTensor(xt::xarray<float>{1.0f, 2.0f})}};
  const core::ServerOptimizerStep s = opt.step(model, aggregates, {});
  CHECK(s.withheld_nonfinite == 1);
  CHECK(floats(s.model, "bias")[0] == 1.0f);
  CHECK(floats(s.state, "bias@momentum")[0] == 0.0f);
  CHECK(floats(s.model, "bias")[1] == 12.0f);
}

TEST_CASE("server_adam_on_coo_moves_and_counts_only_the_elements_sent") {
  std::vector<TensorAggregate> aggregates(1);
  aggregates[0].name = "w";
  aggregates[0].encoding = UpdateEncoding::kCoo;
  aggregates[0].delta =
      core::SparseTensor(core::CooIndices{{1, 0}}, DenseTensor(xt::xarray<float>{0.5f}), {2, 2});
  const ServerOptimizer opt(parse(R"({"type": "adam", "learning_rate": 0.1})"));
  const NamedTensors model = {{"w", DenseTensor::zeros(core::DType::F32, {2, 2})}};
  const core::ServerOptimizerStep s = opt.step(model, aggregates, {});
  const float* w = floats(s.model, "w");
  CHECK(std::abs(w[2] - 0.1 * 0.5 / (0.5 + 1e-3)) < 1e-6);  // first corrected step: η·Δ/(|Δ|+ε)
  CHECK((w[0] == 0.0f && w[1] == 0.0f && w[3] == 0.0f));
  const auto* steps = std::get<DenseTensor>(s.state.at("w@steps")).data<std::int64_t>();
  CHECK((steps[0] == 0 && steps[1] == 0 && steps[2] == 1 && steps[3] == 0));
}

// ---- state

const core::UpdatePlan kTablePlan = core::parse_update_plan(std::string(R"({"updates": {
  "emb": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
  "bias": {"encoding": "dense", "aggregator": "weighted_mean"}}})"));

TEST_CASE("server_optimizer_state_saves_and_loads_back_exactly") {
  std::mt19937_64 rng(3);
  const ServerOptimizer opt(parse(R"({"type": "adam"})"));
  std::vector<std::vector<float>> emb_rows;
  std::vector<float> bias;
  const core::ServerOptimizerStep s =
      opt.step(table_model(), round_aggregates({0, 4}, rng, &emb_rows, &bias), {});
  const std::vector<std::uint8_t> bytes = opt.save_state(s.state);
  CHECK(opt.load_state(bytes.data(), bytes.size(), kTablePlan, s.model) == s.state);
  CHECK(opt.load_state(nullptr, 0, kTablePlan, s.model).empty());
}

TEST_CASE("server_optimizer_state_load_refuses_what_does_not_fit") {
  std::mt19937_64 rng(4);
  const ServerOptimizer adam(parse(R"({"type": "adam"})"));
  std::vector<std::vector<float>> emb_rows;
  std::vector<float> bias;
  const NamedTensors state =
      adam.step(table_model(), round_aggregates({1}, rng, &emb_rows, &bias), {}).state;
  const auto refused = [&](const ServerOptimizer& opt, const NamedTensors& tensors,
                           const core::Metadata& metadata, const std::string& fragment) {
    const auto bytes = core::write_safetensors(tensors, metadata);
    INFO(fragment);
    CHECK_THROWS_MATCHES(opt.load_state(bytes.data(), bytes.size(), kTablePlan, table_model()),
                         InvalidInput, test::MessageContains(fragment));
  };
  const core::Metadata meta{{"format", core::kServerOptimizerStateFormat}, {"type", "adam"}};
  refused(adam, state, {{"format", "other"}, {"type", "adam"}}, "metadata \"format\"");
  refused(ServerOptimizer(parse(R"({"type": "sgd", "momentum": 0.5})")), state, meta,
          "metadata \"type\" must be 'sgd'");
  NamedTensors missing = state;
  missing.erase("emb@v");
  refused(adam, missing, meta, "array 'emb@v' is missing");
  NamedTensors stray = state;
  stray.emplace("frozen@m", DenseTensor::zeros(core::DType::F32, {1}));
  refused(adam, stray, meta, "array 'frozen@m' belongs to no tensor");
  NamedTensors reshaped = state;
  reshaped.at("emb@steps") = DenseTensor::zeros(core::DType::I64, {kRows + 1});
  refused(adam, reshaped, meta, "'emb@steps' must be a dense I64 array of shape [6]");
  NamedTensors negative = state;
  std::get<DenseTensor>(negative.at("emb@steps")).data<std::int64_t>()[2] = -1;
  refused(adam, negative, meta, "negative step count");
  NamedTensors negative_v = state;
  std::get<DenseTensor>(negative_v.at("emb@v")).data<float>()[0] = -1.0f;
  refused(adam, negative_v, meta, "negative second moment");
  refused(ServerOptimizer(parse(R"({"type": "sgd", "learning_rate": 2})")), state,
          {{"format", core::kServerOptimizerStateFormat}, {"type", "sgd"}}, "keeps none");
}

TEST_CASE("server_optimizer_step_refuses_an_aggregate_the_model_does_not_have") {
  std::vector<TensorAggregate> aggregates(1);
  aggregates[0].name = "missing";
  aggregates[0].delta = DenseTensor(xt::xarray<float>{1.0f});
  CHECK_THROWS_MATCHES(
      ServerOptimizer(parse(R"({"type": "adam"})")).step(table_model(), aggregates, {}),
      InvalidInput, test::MessageContains("no dense F32 or F64 tensor 'missing'"));
}

}  // namespace
}  // namespace fedleaf
