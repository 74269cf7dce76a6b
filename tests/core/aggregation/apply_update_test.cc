#include "core/aggregation/round/apply_update.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "core/aggregation/round/round_aggregator.h"
#include "core/wire/safetensors.h"
#include "tests/core/aggregation/aggregation_test_util.h"
#include "tests/core/error_matchers.h"
#include "tests/core/to_dense.h"

namespace fedleaf {
namespace {

// The robust defaults everywhere (clip rms 0.01, min_contributors 2, row clip, example cap), and
// a clipped_weighted_mean with a bound far below the updates' norms.
const core::UpdatePlan kPlan = core::parse_update_plan(R"({"updates": {
    "emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors"},
    "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
    "h/weight": {"encoding": "coo", "aggregator": "clipped_weighted_mean", "clip_norm": 0.001}}})");

core::NamedTensors model() {
  core::NamedTensors m;
  xt::xarray<float> emb = xt::xarray<float>::from_shape({50, 4});
  for (std::size_t i = 0; i < emb.size(); ++i) emb.data()[i] = 0.01f * static_cast<float>(i);
  m.emplace("emb/weight", core::DenseTensor(std::move(emb)));
  m.emplace("out/weight", core::DenseTensor(xt::xarray<float>{{1, 2}, {3, 4}, {5, 6}, {7, 8}}));
  m.emplace("out/bias", core::DenseTensor(xt::xarray<float>{0.5f, -0.5f}));
  m.emplace("h/weight", core::DenseTensor::zeros(DType::F32, {6, 5}));
  return m;
}

core::NamedTensors random_update(std::mt19937_64& rng) {
  core::NamedTensors u;
  u.emplace("emb/weight",
            test::random_update<float>(rng, core::UpdateEncoding::kRowSparse, {50, 4}));
  u.emplace("out/weight", test::random_update<float>(rng, core::UpdateEncoding::kDense, {4, 2}));
  u.emplace("h/weight", test::random_update<float>(rng, core::UpdateEncoding::kCoo, {6, 5}));
  return u;
}

std::vector<std::uint8_t> result_bytes(const core::NamedTensors& update) {
  return core::write_safetensors(update,
                                 {{"kind", "train"}, {"num_examples", "1000000"}, {"loss", "0.5"}});
}

core::DenseTensor dense_of(const core::Tensor& t) {
  return std::visit(
      [](const auto& v) -> core::DenseTensor {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, core::DenseTensor>) {
          return v;
        } else {
          return test::to_dense(v);
        }
      },
      t);
}

}  // namespace

TEST_CASE("apply_update_adds_the_whole_update_where_a_round_would_clip_and_withhold_it") {
  std::mt19937_64 rng(71);
  for (int trial = 0; trial < 20; ++trial) {
    const core::NamedTensors update = random_update(rng);
    const auto bytes = result_bytes(update);

    const core::NamedTensors applied =
        core::apply_update(kPlan, model(), bytes.data(), bytes.size());

    const core::NamedTensors before = model();
    CHECK(std::get<core::DenseTensor>(applied.at("out/bias")) ==
          std::get<core::DenseTensor>(before.at("out/bias")));
    for (const char* name : {"emb/weight", "out/weight", "h/weight"}) {
      const auto& base = std::get<core::DenseTensor>(before.at(name));
      const core::DenseTensor delta = dense_of(update.at(name));
      const float* got = std::get<core::DenseTensor>(applied.at(name)).data<float>();
      for (std::size_t i = 0; i < base.size(); ++i) {
        INFO(name << " element " << i);
        const double want = static_cast<double>(base.data<float>()[i]) + delta.data<float>()[i];
        CHECK(std::abs(static_cast<double>(got[i]) - want) <= 1e-6 * (1.0 + std::abs(want)));
      }
    }
  }
}

TEST_CASE("apply_update_differs_from_a_round_of_one_report_which_applies_the_robust_rules") {
  std::mt19937_64 rng(72);
  core::NamedTensors update = random_update(rng);
  update.insert_or_assign(
      "emb/weight",
      core::RowSparseTensor(core::RowIndices{3},
                            core::DenseTensor(xt::xarray<float>{{0.5f, -0.5f, 0.25f, 1.0f}}),
                            core::DenseShape{50, 4}));
  update.insert_or_assign(
      "h/weight",
      core::SparseTensor(core::CooIndices{{2, 1}}, core::DenseTensor(xt::xarray<float>{0.75f}),
                         core::DenseShape{6, 5}));
  const auto bytes = result_bytes(update);
  core::RoundAggregator round(kPlan, model());
  round.add_result(bytes.data(), bytes.size());

  const core::NamedTensors applied = core::apply_update(kPlan, model(), bytes.data(), bytes.size());
  const core::NamedTensors published = round.next_model();

  // min_contributors 2: the round leaves the row one report sent unchanged.
  const float* row = std::get<core::DenseTensor>(published.at("emb/weight")).data<float>() + 12;
  const float* base = std::get<core::DenseTensor>(model().at("emb/weight")).data<float>() + 12;
  CHECK(std::equal(row, row + 4, base));
  const float* trained = std::get<core::DenseTensor>(applied.at("emb/weight")).data<float>() + 12;
  CHECK(trained[0] == Approx(base[0] + 0.5f));
  CHECK(trained[3] == Approx(base[3] + 1.0f));
  CHECK(round.stats().withheld_per_tensor.at(0).second == 1);
  CHECK_FALSE(applied.at("out/weight") == published.at("out/weight"));
  CHECK_FALSE(applied.at("h/weight") == published.at("h/weight"));
}

TEST_CASE("without_robust_rules_turns_off_every_robust_rule_and_keeps_the_rest") {
  const core::UpdatePlan plain = core::without_robust_rules(kPlan);

  REQUIRE(plain.tensors.size() == kPlan.tensors.size());
  CHECK(plain.max_examples_per_report == 0);
  CHECK_FALSE(plain.adaptive_example_cap.has_value());
  for (std::size_t i = 0; i < plain.tensors.size(); ++i) {
    INFO(plain.tensors[i].name);
    CHECK(plain.tensors[i].name == kPlan.tensors[i].name);
    CHECK(plain.tensors[i].encoding == kPlan.tensors[i].encoding);
    CHECK(plain.tensors[i].download == kPlan.tensors[i].download);
    CHECK(plain.tensors[i].op.clip.kind == core::ClipKind::kOff);
    CHECK_FALSE(plain.tensors[i].adaptive_clip.has_value());
    CHECK(plain.tensors[i].op.row_clip == 0.0);
    CHECK(plain.tensors[i].op.min_contributors == 0);
  }
  CHECK(plain.find("h/weight")->op.op == core::SparseSumOperator::kWeightedMean);
  CHECK(plain.find("emb/weight")->op.op == core::SparseSumOperator::kMeanOverContributors);
}

TEST_CASE("apply_update_rejects_a_result_that_does_not_fit_the_plan_naming_the_tensor") {
  std::mt19937_64 rng(73);
  core::NamedTensors update = random_update(rng);
  update.insert_or_assign("out/weight", core::DenseTensor::zeros(DType::F32, {2, 4}));
  const auto bytes = result_bytes(update);

  CHECK_THROWS_MATCHES(core::apply_update(kPlan, model(), bytes.data(), bytes.size()), InvalidInput,
                       MessageContains("update 'out/weight': dense_shape [2, 4] differs"));
}

}  // namespace fedleaf
