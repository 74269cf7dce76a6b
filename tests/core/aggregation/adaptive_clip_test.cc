#include "core/aggregation/robust/adaptive_clip.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/aggregation/round/next_round_plan.h"
#include "core/aggregation/round/round_aggregator.h"
#include "core/aggregation/updates/update_plan.h"
#include "core/error.h"
#include "core/wire/safetensors.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

using core::AdaptiveClip;
using core::ClipBounds;
using test::MessageContains;

TEST_CASE("next_clip_bound_moves_toward_the_target_quantile_by_the_geometric_rule") {
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<double> log_bound(-6.0, 6.0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int trial = 0; trial < 2000; ++trial) {
    const double bound = std::pow(10.0, log_bound(rng));
    const std::uint64_t reports = 1 + rng() % 40;
    const std::uint64_t clipped = rng() % (reports + 1);
    const AdaptiveClip rule{0.01 + 0.98 * unit(rng), 0.01 + 2.0 * unit(rng)};
    INFO("bound " << bound << " reports " << reports << " clipped " << clipped << " quantile "
                  << rule.quantile << " rate " << rule.learning_rate);
    const double next = core::next_clip_bound(bound, reports, clipped, rule);
    const double unclipped = double(reports - clipped) / double(reports);
    if (unclipped > rule.quantile) CHECK(next < bound);  // too few clipped: tighten
    if (unclipped < rule.quantile) CHECK(next > bound);  // too many clipped: loosen
    CHECK(
        next ==
        Approx(bound * std::exp(-rule.learning_rate * (unclipped - rule.quantile))).epsilon(1e-12));
  }
}

// Rounds whose reports have fixed sizes: the clipped ones are those above the bound.
double run_rounds(double bound, const std::vector<double>& sizes, const AdaptiveClip& rule,
                  int rounds, double* mean_unclipped_share_of_last_half) {
  double unclipped_sum = 0.0;
  for (int r = 0; r < rounds; ++r) {
    const auto clipped = static_cast<std::uint64_t>(
        std::count_if(sizes.begin(), sizes.end(), [&](double s) { return s > bound; }));
    if (r >= rounds / 2) unclipped_sum += 1.0 - double(clipped) / double(sizes.size());
    bound = core::next_clip_bound(bound, sizes.size(), clipped, rule);
  }
  *mean_unclipped_share_of_last_half = unclipped_sum / double(rounds - rounds / 2);
  return bound;
}

TEST_CASE("adaptive_bound_settles_at_the_target_quantile_from_far_above_and_below") {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> size(std::log(0.02), 0.5);
  std::vector<double> sizes(40);
  for (double& s : sizes) s = size(rng);
  std::vector<double> sorted = sizes;
  std::sort(sorted.begin(), sorted.end());
  for (const double quantile : {0.5, 0.8}) {
    for (const double start : {100.0, 1e-6}) {
      INFO("quantile " << quantile << " start " << start);
      double share = 0.0;
      const double bound = run_rounds(start, sizes, {quantile, 0.5}, 400, &share);
      CHECK(share == Approx(quantile).margin(0.05));
      // Within the sizes around the quantile (a step of the rule is at most ×e^0.25 here).
      const auto at = [&](double q) { return sorted[std::size_t(q * double(sorted.size() - 1))]; };
      CHECK(bound >= at(quantile - 0.1) / 1.3);
      CHECK(bound <= at(quantile + 0.1) * 1.3);
    }
  }
}

TEST_CASE("next_clip_bound_keeps_the_bound_without_reports_and_stays_in_range") {
  const AdaptiveClip rule{0.5, 1.0};
  CHECK(core::next_clip_bound(0.3, 0, 0, rule) == 0.3);
  CHECK(core::next_clip_bound(core::kMaxAdaptiveClipBound, 10, 10, rule) ==
        core::kMaxAdaptiveClipBound);
  CHECK(core::next_clip_bound(core::kMinAdaptiveClipBound, 10, 0, rule) ==
        core::kMinAdaptiveClipBound);
  CHECK_THROWS_MATCHES(core::next_clip_bound(0.0, 1, 0, rule), InvalidInput,
                       MessageContains("is not a finite number > 0"));
  CHECK_THROWS_MATCHES(core::next_clip_bound(INFINITY, 1, 0, rule), InvalidInput,
                       MessageContains("is not a finite number > 0"));
  CHECK_THROWS_MATCHES(core::next_clip_bound(1.0, 2, 3, rule), InvalidInput,
                       MessageContains("3 clipped reports exceed the 2 reports"));
}

const std::string kPlan = R"({"updates": {
    "a": {"encoding": "dense", "aggregator": "weighted_mean",
          "clip": {"rms": 1, "quantile": 0.5, "learning_rate": 1}},
    "b": {"encoding": "dense", "aggregator": "weighted_mean", "clip": {"rms": 2}},
    "c": {"encoding": "dense", "aggregator": "sum", "clip": "off"}}})";

TEST_CASE("with_clip_bounds_sets_only_adaptive_bounds_and_rejects_bad_ones") {
  const core::UpdatePlan plan = core::parse_update_plan(kPlan);
  CHECK(core::initial_clip_bounds(plan) == ClipBounds{{"a", 1.0}});
  const core::UpdatePlan round =
      core::with_clip_bounds(plan, {{"a", 0.25}, {"b", 9.0}, {"c", 9.0}, {"zz", 9.0}});
  CHECK(round.find("a")->op.clip.bound == 0.25);
  CHECK(round.find("b")->op.clip.bound == 2.0);
  CHECK(round.find("c")->op.clip.kind == core::ClipKind::kOff);
  CHECK(core::with_clip_bounds(plan, {}).find("a")->op.clip.bound == 1.0);
  for (const double bad : {0.0, -1.0, double(NAN), double(INFINITY)}) {
    CHECK_THROWS_MATCHES(core::with_clip_bounds(plan, {{"a", bad}}), InvalidInput,
                         MessageContains("plan.updates['a'].clip: the round's adaptive bound"));
  }
}

core::NamedTensors model_of_three() {
  core::NamedTensors m;
  for (const char* name : {"a", "b", "c"}) {
    m.emplace(name, core::DenseTensor::zeros(core::DType::F32, {4}));
  }
  return m;
}

// A report whose tensors all hold `value` in each of their 4 elements (rms = |value|).
std::vector<std::uint8_t> report_of(float value) {
  core::NamedTensors t;
  for (const char* name : {"a", "b", "c"}) {
    t.emplace(name, core::DenseTensor(xt::xarray<float>(xt::ones<float>({4}) * value)));
  }
  return core::write_safetensors(t, {{"kind", "train"}, {"num_examples", "1"}, {"loss", "1"}});
}

TEST_CASE("round_stats_give_each_clip_bound_and_the_next_adaptive_bound") {
  const core::UpdatePlan plan = core::parse_update_plan(kPlan);
  core::RoundAggregator round(core::with_clip_bounds(plan, {{"a", 0.5}}), model_of_three());
  for (const float v : {0.1f, 0.2f, 0.3f, 0.7f}) {  // 0.7 is above a's 0.5, below b's 2
    const auto bytes = report_of(v);
    round.add_result(bytes.data(), bytes.size());
  }
  const core::RoundStats stats = round.stats();
  CHECK(stats.clip_bound_per_tensor == ClipBounds{{"a", 0.5}, {"b", 2.0}});
  CHECK(stats.clipped_per_tensor.at(0).second == 1);
  // 3 of 4 unclipped, above the target 0.5: the bound shrinks by exp(-(0.75 - 0.5)).
  const ClipBounds next = core::next_clip_bounds(plan, stats);
  REQUIRE(next.size() == 1);
  CHECK(next[0].first == "a");
  CHECK(next[0].second == Approx(0.5 * std::exp(-0.25)).epsilon(1e-15));
  // The round clipped a's largest report to rms 0.5: mean of (0.1, 0.2, 0.3, 0.5).
  const core::NamedTensors model = round.next_model();
  CHECK(std::get<core::DenseTensor>(model.at("a")).data<float>()[0] == Approx(0.275f));
}

TEST_CASE("checkpoint_clip_bounds_reads_the_bounds_a_checkpoint_was_saved_with") {
  const core::UpdatePlan plan = core::parse_update_plan(kPlan);
  const core::UpdatePlan round_plan = core::with_clip_bounds(plan, {{"a", 0.125}});
  core::RoundAggregator round(round_plan, model_of_three());
  const auto bytes = report_of(0.5f);
  round.add_result(bytes.data(), bytes.size());
  const std::vector<std::uint8_t> ckpt = round.checkpoint();
  const ClipBounds bounds = core::RoundAggregator::checkpoint_clip_bounds(ckpt.data(), ckpt.size());
  CHECK(bounds == ClipBounds{{"a", 0.125}, {"b", 2.0}});
  // Restoring needs the round's bounds: the plan's initial bound does not match the checkpoint.
  const auto restored = core::RoundAggregator::restore(core::with_clip_bounds(plan, bounds),
                                                       model_of_three(), ckpt.data(), ckpt.size());
  CHECK(restored.next_model() == round.next_model());
  CHECK_THROWS_MATCHES(
      core::RoundAggregator::restore(plan, model_of_three(), ckpt.data(), ckpt.size()),
      InvalidInput, MessageContains("which the plan does not say"));

  auto file = core::read_safetensors(ckpt);
  file.metadata["a@clip"] = "median:1";
  const auto bad = core::write_safetensors(file.tensors, file.metadata);
  CHECK_THROWS_MATCHES(core::RoundAggregator::checkpoint_clip_bounds(bad.data(), bad.size()),
                       InvalidInput, MessageContains("is not \"norm:<bound>\" or \"rms:<bound>\""));
}

}  // namespace
}  // namespace fedleaf
