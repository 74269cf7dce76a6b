// Robust clipping in the accumulator (OperatorSpec::clip) and the weight cap and stats of the
// round aggregator, against dense references with the robust rules applied.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/aggregation/round/round_aggregator.h"
#include "core/wire/safetensors.h"
#include "tests/core/aggregation/aggregation_test_util.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

using core::OperatorSpec;

TEST_CASE("robust_clip_matches_the_clipped_dense_reference_for_every_value_operator") {
  std::uint64_t seed = 700;
  for (SparseSumOperator op : {SparseSumOperator::kSum, SparseSumOperator::kWeightedMean,
                               SparseSumOperator::kMeanOverContributors}) {
    // Updates hold values in [-1, 1] (RMS about 0.58): these bounds clip most of them, and
    // some not.
    for (UpdateClip clip : {UpdateClip{ClipKind::kNorm, 0.7}, UpdateClip{ClipKind::kRms, 0.5}}) {
      INFO(core::operator_name(op) << (clip.kind == ClipKind::kNorm ? " norm" : " rms"));
      test::check_operator_properties(OperatorSpec{op, 0.0, clip}, ++seed);
    }
  }
}

TEST_CASE("row_clip_matches_the_row_clipped_dense_reference") {
  std::uint64_t seed = 800;
  for (SparseSumOperator op : {SparseSumOperator::kSum, SparseSumOperator::kWeightedMean,
                               SparseSumOperator::kMeanOverContributors}) {
    // Values in [-1, 1]: rows of rms ≈ 0.58 against row bounds 0.5 and 1.5 · 0.5 (some clipped,
    // some not), then the whole update against rms 0.5.
    for (double k : {1.0, 1.5}) {
      INFO(core::operator_name(op) << " row_clip " << k);
      OperatorSpec spec{op, 0.0, {ClipKind::kRms, 0.5}};
      spec.row_clip = k;
      test::check_operator_properties(spec, ++seed);
    }
  }
}

TEST_CASE("row_clip_scales_rows_above_the_multiple_of_the_rms_bound_and_counts_them") {
  // rms bound 1, row_clip 2, rows of width 2: a row's norm may be at most 2 · 1 · sqrt(2).
  OperatorSpec spec{SparseSumOperator::kSum, 0.0, {ClipKind::kRms, 1.0}};
  spec.row_clip = 2.0;
  core::SparseSumAccumulator acc("e", spec, UpdateEncoding::kRowSparse, DType::F64, {100, 2});
  // 98 rows of zeros and one row {30, 40} (norm 50): the report's rms, 50 / sqrt(198) ≈ 3.6,
  // would let the whole budget through on one row; the row clip scales it to norm 2·sqrt(2)
  // first, and the report (norm 2.83 ≤ sqrt(198)) is then not clipped.
  core::RowIndices rows = xt::arange<std::int64_t>(99);
  xt::xarray<double> values = xt::zeros<double>({std::size_t{99}, std::size_t{2}});
  values(7, 0) = 30.0;
  values(7, 1) = 40.0;
  acc.add(core::RowSparseTensor(rows, core::DenseTensor(values), {100, 2}), 1.0);
  CHECK(acc.num_rows_clipped() == 1);
  CHECK(acc.num_clipped() == 0);
  const auto result = std::get<core::RowSparseTensor>(acc.finalize());
  const double* v = result.values().data<double>();
  CHECK(v[14] == Approx(0.6 * 2.0 * std::sqrt(2.0)));
  CHECK(v[15] == Approx(0.8 * 2.0 * std::sqrt(2.0)));

  // The count and the multiple survive a checkpoint.
  const auto bytes = acc.to_safetensors();
  const auto loaded = core::SparseSumAccumulator::from_safetensors(bytes.data(), bytes.size());
  CHECK(loaded.spec() == spec);
  CHECK(loaded.num_rows_clipped() == 1);
}

TEST_CASE("row_clip_is_refused_outside_row_sparse_tensors_with_an_rms_clip") {
  OperatorSpec norm{SparseSumOperator::kSum, 0.0, {ClipKind::kNorm, 1.0}};
  norm.row_clip = 2.0;
  CHECK_THROWS_MATCHES(
      core::SparseSumAccumulator("e", norm, UpdateEncoding::kRowSparse, DType::F64, {4, 2}),
      InvalidInput, MessageContains("needs a row_sparse tensor with an rms clip"));
  OperatorSpec rms{SparseSumOperator::kSum, 0.0, {ClipKind::kRms, 1.0}};
  rms.row_clip = 2.0;
  CHECK_THROWS_MATCHES(core::SparseSumAccumulator("e", rms, UpdateEncoding::kCoo, DType::F64, {4}),
                       InvalidInput, MessageContains("needs a row_sparse tensor with an rms clip"));
}

core::SparseTensor coo(xt::xarray<float> values, core::CooIndices indices) {
  return core::SparseTensor(std::move(indices), core::DenseTensor(std::move(values)), {10});
}

TEST_CASE("robust_clip_scales_only_updates_above_the_bound_and_counts_them") {
  // norm bound 1: {3, 4} has norm 5 and becomes {0.6, 0.8}; {0.3, 0.4} stays.
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kSum, 0.0, {ClipKind::kNorm, 1.0}},
                                 UpdateEncoding::kCoo, DType::F64, {10});
  acc.add(core::SparseTensor(core::CooIndices{{1}, {2}},
                             core::DenseTensor(xt::xarray<double>{3.0, 4.0}), {10}),
          1.0);
  acc.add(core::SparseTensor(core::CooIndices{{2}, {5}},
                             core::DenseTensor(xt::xarray<double>{0.3, 0.4}), {10}),
          1.0);
  CHECK(acc.num_clipped() == 1);
  const auto result = std::get<core::SparseTensor>(acc.finalize());
  CHECK(result.indices() == core::CooIndices{{1}, {2}, {5}});
  const double* v = result.values().data<double>();
  CHECK(v[0] == Approx(0.6));
  CHECK(v[1] == Approx(0.8 + 0.3));
  CHECK(v[2] == Approx(0.4));
}

TEST_CASE("robust_rms_clip_bounds_the_root_mean_square_of_the_values_sent") {
  // rms bound 1 over 4 sent values: norm bound 2. Duplicates are summed first: key 3 sends 6.
  core::SparseSumAccumulator acc("h", {SparseSumOperator::kSum, 0.0, {ClipKind::kRms, 1.0}},
                                 UpdateEncoding::kCoo, DType::F32, {10});
  acc.add(coo(xt::xarray<float>{1.f, 1.f, 1.f, 1.f}, core::CooIndices{{0}, {1}, {2}, {4}}), 1.0);
  CHECK(acc.num_clipped() == 0);  // norm 2 is not above 2
  acc.add(coo(xt::xarray<float>{3.f, 3.f}, core::CooIndices{{3}, {3}}), 1.0);
  CHECK(acc.num_clipped() == 1);  // one value 6 > 1 · sqrt(1)
  const auto result = std::get<core::SparseTensor>(acc.finalize());
  CHECK(result.values().data<float>()[3] == 1.0f);  // key 3: 6 scaled to norm 1
}

TEST_CASE("robust_clip_is_rejected_for_count_clipped_weighted_mean_and_bad_bounds") {
  const auto rejects = [](OperatorSpec spec, const std::string& fragment) {
    CHECK_THROWS_MATCHES(
        core::SparseSumAccumulator("t", spec, UpdateEncoding::kCoo, DType::F32, {10}), InvalidInput,
        MessageContains(fragment));
  };
  rejects({SparseSumOperator::kCount, 0.0, {ClipKind::kRms, 1.0}}, "count takes no robust clip");
  rejects({SparseSumOperator::kClippedWeightedMean, 1.0, {ClipKind::kNorm, 1.0}},
          "clipped_weighted_mean takes no robust clip");
  rejects({SparseSumOperator::kSum, 0.0, {ClipKind::kNorm, 0.0}}, "the clip bound 0 must be");
  rejects({SparseSumOperator::kSum, 0.0, {ClipKind::kRms, NAN}}, "must be finite and > 0");
}

TEST_CASE("robust_clip_and_clipped_count_survive_checkpoint_and_merge") {
  std::mt19937_64 rng(71);
  const OperatorSpec spec{SparseSumOperator::kWeightedMean, 0.0, {ClipKind::kRms, 0.4}};
  const test::Scenario s = test::random_scenario(rng, UpdateEncoding::kRowSparse, DType::F32, 12);
  core::SparseSumAccumulator whole = test::accumulate(s, spec);
  REQUIRE(whole.num_clipped() > 0);
  REQUIRE(whole.num_clipped() < 12);

  const auto bytes = whole.to_safetensors();
  const core::SparseSumAccumulator loaded =
      core::SparseSumAccumulator::from_safetensors(bytes.data(), bytes.size());
  CHECK(loaded.spec() == spec);
  CHECK(loaded.num_clipped() == whole.num_clipped());
  CHECK(loaded.finalize() == whole.finalize());

  core::SparseSumAccumulator a("t", spec, s.encoding, s.dtype, s.dense_shape);
  core::SparseSumAccumulator b("t", spec, s.encoding, s.dtype, s.dense_shape);
  for (std::size_t c = 0; c < s.clients.size(); ++c) {
    (c % 2 ? a : b).add(s.clients[c].tensor, s.clients[c].weight);
  }
  a.merge(b);
  CHECK(a.num_clipped() == whole.num_clipped());

  core::SparseSumAccumulator other("t", {SparseSumOperator::kWeightedMean}, s.encoding, s.dtype,
                                   s.dense_shape);
  CHECK_THROWS_MATCHES(a.merge(other), InvalidInput, MessageContains("differs"));

  auto file = core::read_safetensors(bytes);
  file.metadata["t@num_clipped"] = "13";
  const auto bad = core::write_safetensors(file.tensors, file.metadata);
  CHECK_THROWS_MATCHES(core::SparseSumAccumulator::from_safetensors(bad.data(), bad.size()),
                       InvalidInput, MessageContains("num_clipped 13 exceeds num_updates 12"));
  file.metadata["t@num_clipped"] = "0";
  file.metadata["t@clip"] = "median:1";
  const auto bad_clip = core::write_safetensors(file.tensors, file.metadata);
  CHECK_THROWS_MATCHES(
      core::SparseSumAccumulator::from_safetensors(bad_clip.data(), bad_clip.size()), InvalidInput,
      MessageContains("is not norm:<bound> or rms:<bound>"));
}

// --- RoundAggregator: weight cap, stats, poisoning ---------------------------------------

core::NamedTensors small_model() {
  core::NamedTensors m;
  m.emplace("w", core::DenseTensor::zeros(DType::F32, {64}));
  return m;
}

std::vector<std::uint8_t> report(const xt::xarray<float>& w, const std::string& num_examples) {
  core::NamedTensors t;
  t.emplace("w", core::DenseTensor(w));
  return core::write_safetensors(
      t, {{"kind", "train"}, {"num_examples", num_examples}, {"loss", "1"}});
}

void add(core::RoundAggregator& round, const std::vector<std::uint8_t>& bytes) {
  round.add_result(bytes.data(), bytes.size());
}

xt::xarray<float> honest_update(std::mt19937_64& rng) {
  std::normal_distribution<float> step(0.0f, 0.01f);
  xt::xarray<float> u = xt::xarray<float>::from_shape({64});
  for (float& v : u) v = step(rng);
  return u;
}

double rms_distance(const core::NamedTensors& a, const core::NamedTensors& b) {
  const float* x = std::get<core::DenseTensor>(a.at("w")).data<float>();
  const float* y = std::get<core::DenseTensor>(b.at("w")).data<float>();
  double sq = 0.0;
  for (std::size_t i = 0; i < 64; ++i) sq += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
  return std::sqrt(sq / 64.0);
}

const std::string kWeightedMeanPlan = R"({"updates": {
    "w": {"encoding": "dense", "aggregator": "weighted_mean"}}})";

TEST_CASE("round_caps_claimed_weight_at_max_examples_per_report_and_counts_capped_reports") {
  core::RoundAggregator round(
      core::parse_update_plan(std::string(R"({"max_examples_per_report": 100, "updates": {
          "w": {"encoding": "dense", "aggregator": "weighted_mean", "clip": "off"}}})")),
      small_model());
  add(round, report(xt::ones<float>({64}), "100"));
  add(round, report(xt::ones<float>({64}) * 3.0f, "9007199254740992"));  // 2^53, capped at 100
  CHECK(round.total_weight() == 200.0);
  const core::RoundStats stats = round.stats();
  CHECK(stats.num_reports == 2);
  CHECK(stats.num_capped == 1);
  CHECK(std::get<core::DenseTensor>(round.next_model().at("w")).data<float>()[0] == 2.0f);

  const auto ckpt = round.checkpoint();
  const core::RoundAggregator resumed = core::RoundAggregator::restore(
      core::parse_update_plan(std::string(R"({"max_examples_per_report": 100, "updates": {
          "w": {"encoding": "dense", "aggregator": "weighted_mean", "clip": "off"}}})")),
      small_model(), ckpt.data(), ckpt.size());
  CHECK(resumed.stats().num_capped == 1);
  CHECK(resumed.next_model() == round.next_model());

  auto file = core::read_safetensors(ckpt);
  file.metadata["num_capped"] = "3";
  const auto bad = core::write_safetensors(file.tensors, file.metadata);
  CHECK_THROWS_MATCHES(
      core::RoundAggregator::restore(core::parse_update_plan(std::string(
                                         R"({"max_examples_per_report": 100, "updates": {
          "w": {"encoding": "dense", "aggregator": "weighted_mean", "clip": "off"}}})")),
                                     small_model(), bad.data(), bad.size()),
      InvalidInput, MessageContains("num_capped 3 exceeds num_reports 2"));
}

TEST_CASE("round_with_the_weight_cap_off_counts_the_claimed_weight") {
  core::RoundAggregator round(
      core::parse_update_plan(std::string(R"({"max_examples_per_report": "off", "updates": {
          "w": {"encoding": "dense", "aggregator": "weighted_mean"}}})")),
      small_model());
  add(round, report(xt::zeros<float>({64}), "9007199254740992"));
  CHECK(round.total_weight() == 9007199254740992.0);
  CHECK(round.stats().num_capped == 0);
}

TEST_CASE("round_merge_needs_the_same_weight_cap_and_adds_capped_counts") {
  const auto plan = [](const char* cap) {
    return core::parse_update_plan(std::string(R"({"max_examples_per_report": )") + cap +
                                   R"(, "updates": {
          "w": {"encoding": "dense", "aggregator": "weighted_mean"}}})");
  };
  core::RoundAggregator a(plan("10"), small_model()), b(plan("10"), small_model());
  add(a, report(xt::zeros<float>({64}), "11"));
  add(b, report(xt::zeros<float>({64}), "12"));
  a.merge(b);
  CHECK(a.stats().num_capped == 2);
  CHECK_THROWS_MATCHES(a.merge(core::RoundAggregator(plan("20"), small_model())), InvalidInput,
                       MessageContains("plans' updates differ"));
}

TEST_CASE("round_defaults_bound_a_scaled_and_overweighted_poisoning_report") {
  std::mt19937_64 rng(90);
  std::vector<xt::xarray<float>> honest;
  // RMS ≈ 0.005, below the default clip's first-round bound (kDefaultClipRms = 0.01).
  for (int c = 0; c < 10; ++c) honest.push_back(honest_update(rng) * 0.5f);
  const auto run = [&](const std::string& plan_json, bool attack) {
    core::RoundAggregator round(core::parse_update_plan(plan_json), small_model());
    for (const auto& u : honest) add(round, report(u, "300"));
    if (attack) {
      add(round, report(honest[0] * 1e6f, "300"));                            // scaled ×1e6
      add(round, report(xt::ones<float>({64}) * 1e30f, "9007199254740992"));  // ±1e30, 2^53
    }
    return std::make_pair(round.next_model(), round.stats());
  };
  const auto [honest_model, honest_stats] = run(kWeightedMeanPlan, false);
  CHECK(honest_stats.clipped_per_tensor.at(0).second == 0);  // defaults leave honest ones alone
  const auto [defended, stats] = run(kWeightedMeanPlan, true);
  CHECK(stats.num_capped == 1);
  CHECK(stats.clipped_per_tensor.at(0) == std::make_pair(std::string("w"), std::uint64_t{2}));
  // The attackers move the model by at most their weight share × the RMS bound, (300 + 10000) /
  // 13300 × 0.01, plus the dilution of the honest mean (RMS ≈ 0.002).
  const double share = (300.0 + 10000.0) / (3000.0 + 300.0 + 10000.0);
  CHECK(rms_distance(defended, honest_model) <= share * core::kDefaultClipRms + 0.003);
  const auto [undefended, off_stats] = run(R"({"max_examples_per_report": "off", "updates": {
      "w": {"encoding": "dense", "aggregator": "weighted_mean", "clip": "off"}}})",
                                           true);
  CHECK(off_stats.num_capped == 0);
  CHECK(rms_distance(undefended, honest_model) > 1e20);
}

// --- RoundAggregator: min_contributors --------------------------------------------------------

core::NamedTensors emb_model() {
  core::NamedTensors m;
  m.emplace("emb", core::DenseTensor::zeros(DType::F32, {10, 2}));
  return m;
}

std::vector<std::uint8_t> row_report(std::vector<std::int64_t> ids) {
  core::RowIndices idx = core::RowIndices::from_shape({ids.size()});
  for (std::size_t i = 0; i < ids.size(); ++i) idx(i) = ids[i];
  xt::xarray<float> v = xt::xarray<float>::from_shape({ids.size(), 2});
  v.fill(0.5f);
  core::NamedTensors t;
  t.emplace("emb", core::RowSparseTensor(idx, core::DenseTensor(std::move(v)), {10, 2}));
  return core::write_safetensors(t, {{"kind", "train"}, {"num_examples", "10"}, {"loss", "1"}});
}

// Clip off: these cases are about min_contributors, with values the default clip would scale.
core::UpdatePlan emb_plan(const std::string& extra) {
  return core::parse_update_plan(
      R"({"updates": {"emb": {"encoding": "row_sparse", "aggregator": "mean_over_contributors",
                              "clip": "off")" +
      extra + "}}}");
}

TEST_CASE("round_withholds_rows_below_min_contributors_by_default_and_counts_them") {
  core::RoundAggregator round(emb_plan(""), emb_model());
  add(round, row_report({1, 2}));
  add(round, row_report({2, 3}));
  CHECK(round.stats().withheld_per_tensor ==
        std::vector<std::pair<std::string, std::uint64_t>>{{"emb", 2}});  // rows 1 and 3
  const core::NamedTensors model = round.next_model();
  const auto& next = std::get<core::DenseTensor>(model.at("emb"));
  CHECK(next.data<float>()[2] == 0.0f);  // row 1: one report
  CHECK(next.data<float>()[4] == 0.5f);  // row 2: two reports
  CHECK(next.data<float>()[6] == 0.0f);

  core::RoundAggregator off(emb_plan(R"(, "min_contributors": "off")"), emb_model());
  add(off, row_report({1, 2}));
  CHECK(off.stats().withheld_per_tensor.at(0).second == 0);
  CHECK(std::get<core::DenseTensor>(off.next_model().at("emb")).data<float>()[2] == 0.5f);
}

core::UpdatePlan row_clip_plan(const std::string& row_clip) {
  return core::parse_update_plan(
      R"({"updates": {"emb": {"encoding": "row_sparse", "aggregator": "mean_over_contributors",
                              "clip": {"rms": 0.1})" +
      row_clip + "}}}");
}

TEST_CASE("round_counts_clipped_rows_and_finishes_a_round_checkpointed_before_row_clipping") {
  // Rows of 0.5 against the rms bound 0.1: with row_clip 2 each row is cut to rms 0.2, then the
  // report to rms 0.1.
  core::RoundAggregator round(row_clip_plan(R"(, "row_clip": 2)"), emb_model());
  add(round, row_report({1, 2}));
  CHECK(round.stats().rows_clipped_per_tensor ==
        std::vector<std::pair<std::string, std::uint64_t>>{{"emb", 2}});
  // A round checkpointed by a server without row clipping restores under a plan that has it
  // and finishes as it started: without it (and without a clipped-rows count).
  core::RoundAggregator before(row_clip_plan(R"(, "row_clip": "off")"), emb_model());
  add(before, row_report({1, 2}));
  const auto ckpt = before.checkpoint();
  core::RoundAggregator resumed =
      core::RoundAggregator::restore(row_clip_plan(""), emb_model(), ckpt.data(), ckpt.size());
  CHECK(resumed.stats().rows_clipped_per_tensor.empty());
  add(resumed, row_report({1, 2}));
  add(before, row_report({1, 2}));
  CHECK(resumed.next_model() == before.next_model());
}

TEST_CASE("round_restores_a_v1_checkpoint_without_the_threshold_and_rejects_unknown_formats") {
  // A v1 checkpoint (written before report counts) holds no @reports and no @min_contributors:
  // the round it holds finishes without the threshold.
  core::RoundAggregator old(emb_plan(R"(, "min_contributors": "off")"), emb_model());
  add(old, row_report({1, 2}));
  auto file = core::read_safetensors(old.checkpoint());
  REQUIRE(file.metadata.at("format") == "fedleaf.round_aggregator.v2");
  file.metadata["format"] = "fedleaf.round_aggregator.v1";
  const auto v1 = core::write_safetensors(file.tensors, file.metadata);

  core::RoundAggregator resumed =
      core::RoundAggregator::restore(emb_plan(""), emb_model(), v1.data(), v1.size());
  add(resumed, row_report({2, 3}));
  CHECK(resumed.stats().withheld_per_tensor.at(0).second == 0);
  CHECK(std::get<core::DenseTensor>(resumed.next_model().at("emb")).data<float>()[2] == 0.5f);

  // The same bytes as v2 claim the threshold was off, which the plan does not say.
  file.metadata["format"] = "fedleaf.round_aggregator.v2";
  const auto v2 = core::write_safetensors(file.tensors, file.metadata);
  CHECK_THROWS_MATCHES(
      core::RoundAggregator::restore(emb_plan(""), emb_model(), v2.data(), v2.size()), InvalidInput,
      MessageContains("which the plan does not say"));
  file.metadata["format"] = "fedleaf.round_aggregator.v3";
  const auto v3 = core::write_safetensors(file.tensors, file.metadata);
  CHECK_THROWS_MATCHES(
      core::RoundAggregator::restore(emb_plan(""), emb_model(), v3.data(), v3.size()), InvalidInput,
      MessageContains("format 'fedleaf.round_aggregator.v3' is not 'fedleaf.round_aggregator.v2'"));

  // A v2 checkpoint with the threshold keeps the counts across the restart.
  core::RoundAggregator on(emb_plan(""), emb_model());
  add(on, row_report({1, 2}));
  const auto ckpt = on.checkpoint();
  core::RoundAggregator back =
      core::RoundAggregator::restore(emb_plan(""), emb_model(), ckpt.data(), ckpt.size());
  add(back, row_report({2, 3}));
  CHECK(back.stats().withheld_per_tensor.at(0).second == 2);
}

}  // namespace
}  // namespace fedleaf
