#include "core/aggregation/updates/update_plan.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tests/core/error_matchers.h"

namespace fedleaf {
namespace {

using core::DownloadMode;
using core::SelectPadding;
using core::UpdateEncoding;
using test::MessageContains;

// A plan whose only update entry is `entry` for tensor "emb/weight".
std::string plan_with(const std::string& entry) {
  return R"({"updates": {"emb/weight": )" + entry + "}}";
}

void check_rejects(const std::string& entry, const std::string& message) {
  INFO(entry);
  CHECK_THROWS_MATCHES(core::parse_update_plan(plan_with(entry)), InvalidInput,
                       MessageContains(message));
}

TEST_CASE("update_plan_parses_every_field_and_finds_tensors_by_name") {
  const core::UpdatePlan plan = core::parse_update_plan(std::string(R"({"updates": {
    "out/weight": {"encoding": "dense", "aggregator": "weighted_mean"},
    "emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors",
                   "download": "select", "max_select_rows": 5000,
                   "select_padding": {"multiple": 64}},
    "h/weight": {"encoding": "coo", "aggregator": "clipped_weighted_mean", "clip_norm": 2.5},
    "tag/weight": {"encoding": "row_sparse", "aggregator": "count",
                   "select_padding": {"count": 100}}}})"));

  REQUIRE(plan.tensors.size() == 4);
  CHECK(plan.tensors[0].name == "emb/weight");  // sorted by name
  CHECK(plan.tensors[3].name == "tag/weight");
  const core::TensorUpdatePlan* emb = plan.find("emb/weight");
  REQUIRE(emb != nullptr);
  CHECK(emb->encoding == UpdateEncoding::kRowSparse);
  CHECK(emb->op.op == core::SparseSumOperator::kMeanOverContributors);
  CHECK(emb->download == DownloadMode::kSelect);
  CHECK(emb->max_select_rows == 5000);
  CHECK(emb->select_padding == SelectPadding{SelectPadding::Rule::kMultiple, 64});
  CHECK(emb->path == "plan.updates['emb/weight']");
  const core::TensorUpdatePlan* h = plan.find("h/weight");
  REQUIRE(h != nullptr);
  CHECK(h->op == core::OperatorSpec{core::SparseSumOperator::kClippedWeightedMean, 2.5});
  CHECK(h->download == DownloadMode::kFull);
  CHECK(h->max_select_rows == 0);
  CHECK(h->select_padding.rule == SelectPadding::Rule::kNone);
  CHECK(plan.find("tag/weight")->select_padding == SelectPadding{SelectPadding::Rule::kCount, 100});
  CHECK(plan.find("out/weight")->op.op == core::SparseSumOperator::kWeightedMean);
  CHECK(plan.find("out/bias") == nullptr);
  CHECK(plan.find("") == nullptr);
  CHECK(plan.find("zzz") == nullptr);
}

TEST_CASE("update_plan_download_defaults_to_select_for_row_sparse_and_full_otherwise") {
  for (const auto& [encoding, want] :
       {std::pair<std::string, DownloadMode>{"row_sparse", DownloadMode::kSelect},
        {"dense", DownloadMode::kFull},
        {"coo", DownloadMode::kFull}}) {
    const core::UpdatePlan plan = core::parse_update_plan(
        plan_with(R"({"encoding": ")" + encoding + R"(", "aggregator": "sum"})"));
    CHECK(plan.tensors.at(0).download == want);
  }
  const core::UpdatePlan full = core::parse_update_plan(
      plan_with(R"({"encoding": "row_sparse", "aggregator": "sum", "download": "full"})"));
  CHECK(full.tensors.at(0).download == DownloadMode::kFull);
}

TEST_CASE("update_plan_without_updates_is_empty") {
  CHECK(core::parse_update_plan(std::string(R"({"kind": "evaluate"})")).tensors.empty());
  CHECK(core::parse_update_plan(nlohmann::json::object()).tensors.empty());
}

TEST_CASE("update_plan_rejects_bad_download_settings_naming_the_path_and_rule") {
  check_rejects(R"({"encoding": "row_sparse", "aggregator": "sum", "download": "some"})",
                R"(plan.updates['emb/weight'].download: must be "full" or "select")");
  check_rejects(R"({"encoding": "row_sparse", "aggregator": "sum", "download": 1})",
                R"(plan.updates['emb/weight'].download: must be "full" or "select")");
  check_rejects(R"({"encoding": "dense", "aggregator": "sum", "download": "select"})",
                R"(plan.updates['emb/weight'].download: "select" needs encoding "row_sparse")");
  check_rejects(R"({"encoding": "coo", "aggregator": "sum", "download": "select"})",
                R"(plan.updates['emb/weight'].download: "select" needs encoding "row_sparse")");
}

TEST_CASE("update_plan_rejects_select_options_without_select_or_out_of_range") {
  check_rejects(
      R"({"encoding": "dense", "aggregator": "sum", "max_select_rows": 10})",
      R"(plan.updates['emb/weight'].max_select_rows: only applies with "download": "select")");
  check_rejects(
      R"({"encoding": "row_sparse", "aggregator": "sum", "download": "full", "max_select_rows": 10})",
      R"(plan.updates['emb/weight'].max_select_rows: only applies with "download": "select")");
  check_rejects(R"({"encoding": "row_sparse", "aggregator": "sum", "max_select_rows": 0})",
                "plan.updates['emb/weight'].max_select_rows: expected an integer in [1, 2^53]");
  check_rejects(R"({"encoding": "row_sparse", "aggregator": "sum", "max_select_rows": -3})",
                "plan.updates['emb/weight'].max_select_rows: expected an integer in [1, 2^53]");
  check_rejects(R"({"encoding": "row_sparse", "aggregator": "sum", "max_select_rows": 1.5})",
                "plan.updates['emb/weight'].max_select_rows: expected an integer in [1, 2^53]");
  check_rejects(
      R"({"encoding": "row_sparse", "aggregator": "sum", "max_select_rows": 9007199254740993})",
      "plan.updates['emb/weight'].max_select_rows: expected an integer in [1, 2^53]");
  check_rejects(
      R"({"encoding": "dense", "aggregator": "sum", "select_padding": {"multiple": 8}})",
      R"(plan.updates['emb/weight'].select_padding: only applies with "download": "select")");
  for (const char* padding :
       {R"({})", R"({"multiple": 8, "count": 8})", R"({"round": 8})", R"([8])", R"(8)"}) {
    check_rejects(
        R"({"encoding": "row_sparse", "aggregator": "sum", "select_padding": )" +
            std::string(padding) + "}",
        R"(plan.updates['emb/weight'].select_padding: expected {"multiple": N} or {"count": N})");
  }
  check_rejects(
      R"({"encoding": "row_sparse", "aggregator": "sum", "select_padding": {"multiple": 0}})",
      "plan.updates['emb/weight'].select_padding.multiple: expected an integer in [1, 2^31]");
  check_rejects(
      R"({"encoding": "row_sparse", "aggregator": "sum", "select_padding": {"count": 4294967296}})",
      "plan.updates['emb/weight'].select_padding.count: expected an integer in [1, 2^31]");
}

TEST_CASE("update_plan_rejects_bad_entries_naming_the_path_and_rule") {
  check_rejects(R"(7)", "plan.updates['emb/weight']: expected an object");
  check_rejects(R"({"aggregator": "sum"})", "plan.updates['emb/weight'].encoding: missing");
  check_rejects(R"({"encoding": 1, "aggregator": "sum"})",
                "plan.updates['emb/weight'].encoding: expected a string");
  check_rejects(R"({"encoding": "csr", "aggregator": "sum"})",
                "plan.updates['emb/weight'].encoding: unknown encoding 'csr'");
  check_rejects(R"({"encoding": "dense"})", "plan.updates['emb/weight'].aggregator: missing");
  check_rejects(R"({"encoding": "dense", "aggregator": "median"})",
                "plan.updates['emb/weight'].aggregator: unknown aggregator 'median'");
  check_rejects(R"({"encoding": "dense", "aggregator": "clipped_weighted_mean"})",
                "plan.updates['emb/weight'].clip_norm: missing");
  check_rejects(R"({"encoding": "dense", "aggregator": "clipped_weighted_mean", "clip_norm": -1})",
                "plan.updates['emb/weight'].clip_norm: expected a finite number > 0");
  check_rejects(R"({"encoding": "dense", "aggregator": "sum", "clip_norm": "1"})",
                "plan.updates['emb/weight'].clip_norm: expected a finite number > 0");
  CHECK_THROWS_MATCHES(core::parse_update_plan(std::string(R"({"updates": [1]})")), InvalidInput,
                       MessageContains("plan.updates: expected an object"));
  CHECK_THROWS_MATCHES(core::parse_update_plan(std::string("{")), InvalidInput,
                       MessageContains("plan: not valid JSON"));
  CHECK_THROWS_MATCHES(core::parse_update_plan(std::string("[]")), InvalidInput,
                       MessageContains("plan: expected a JSON object"));
}

TEST_CASE("download_mode_names_and_update_plan_paths") {
  CHECK(core::download_mode_name(DownloadMode::kFull) == "full");
  CHECK(core::download_mode_name(DownloadMode::kSelect) == "select");
  CHECK(core::update_plan_path("emb/weight") == "plan.updates['emb/weight']");
}

}  // namespace
}  // namespace fedleaf

namespace fedleaf {
namespace {

using core::ClipKind;
using core::UpdateClip;

UpdateClip clip_of(const std::string& entry) {
  return core::parse_update_plan(plan_with(entry)).tensors.at(0).op.clip;
}

std::optional<core::AdaptiveClip> adaptive_of(const std::string& entry) {
  return core::parse_update_plan(plan_with(entry)).tensors.at(0).adaptive_clip;
}

TEST_CASE("update_plan_robust_defaults_clip_value_operators_and_cap_report_weight") {
  for (const char* op : {"sum", "weighted_mean", "mean_over_contributors"}) {
    INFO(op);
    const std::string entry = R"({"encoding": "coo", "aggregator": ")" + std::string(op) + R"("})";
    CHECK(clip_of(entry) == UpdateClip{ClipKind::kRms, core::kDefaultClipRms});
    CHECK(adaptive_of(entry) ==
          core::AdaptiveClip{core::kDefaultClipQuantile, core::kDefaultClipLearningRate});
  }
  CHECK(clip_of(R"({"encoding": "coo", "aggregator": "count"})") == UpdateClip{});
  CHECK_FALSE(adaptive_of(R"({"encoding": "coo", "aggregator": "count"})"));
  CHECK(clip_of(R"({"encoding": "coo", "aggregator": "clipped_weighted_mean", "clip_norm": 2})") ==
        UpdateClip{});
  CHECK(core::parse_update_plan(plan_with(R"({"encoding": "dense", "aggregator": "sum"})"))
            .max_examples_per_report == core::kDefaultMaxExamplesPerReport);
  CHECK(core::kDefaultMaxExamplesPerReport == 10000);
}

TEST_CASE("update_plan_robust_rules_can_be_set_or_turned_off_explicitly") {
  CHECK(clip_of(R"({"encoding": "dense", "aggregator": "sum", "clip": "off"})") == UpdateClip{});
  CHECK(clip_of(R"({"encoding": "dense", "aggregator": "sum", "clip": {"norm": 2.5}})") ==
        UpdateClip{ClipKind::kNorm, 2.5});
  CHECK(clip_of(R"({"encoding": "dense", "aggregator": "weighted_mean", "clip": {"rms": 0.1}})") ==
        UpdateClip{ClipKind::kRms, 0.1});
  CHECK(clip_of(R"({"encoding": "dense", "aggregator": "count", "clip": "off"})") == UpdateClip{});
  CHECK_FALSE(adaptive_of(R"({"encoding": "dense", "aggregator": "sum", "clip": "off"})"));
  CHECK_FALSE(adaptive_of(R"({"encoding": "dense", "aggregator": "sum", "clip": {"rms": 1}})"));
  const std::string adaptive_rms =
      R"({"encoding": "dense", "aggregator": "sum", "clip": {"rms": 0.5, "quantile": 0.9}})";
  CHECK(clip_of(adaptive_rms) == UpdateClip{ClipKind::kRms, 0.5});
  CHECK(adaptive_of(adaptive_rms) == core::AdaptiveClip{0.9, core::kDefaultClipLearningRate});
  const std::string adaptive_norm =
      R"({"encoding": "coo", "aggregator": "weighted_mean",
          "clip": {"norm": 3, "quantile": 0.25, "learning_rate": 0.2}})";
  CHECK(clip_of(adaptive_norm) == UpdateClip{ClipKind::kNorm, 3.0});
  CHECK(adaptive_of(adaptive_norm) == core::AdaptiveClip{0.25, 0.2});
  const auto cap = [](const std::string& value) {
    return core::parse_update_plan(std::string(R"({"max_examples_per_report": )") + value + "}")
        .max_examples_per_report;
  };
  CHECK(cap(R"("off")") == 0);
  CHECK(cap("1") == 1);
  CHECK(cap("9007199254740992") == 9007199254740992ull);
}

TEST_CASE("update_plan_rejects_bad_robust_settings_naming_the_path_and_rule") {
  check_rejects(R"({"encoding": "dense", "aggregator": "sum", "clip": "on"})",
                R"(plan.updates['emb/weight'].clip: expected "off", {"norm": F} or {"rms": F})");
  check_rejects(R"({"encoding": "dense", "aggregator": "sum", "clip": {"norm": 1, "rms": 1}})",
                R"(plan.updates['emb/weight'].clip: expected "off")");
  check_rejects(R"({"encoding": "dense", "aggregator": "sum", "clip": {"median": 1}})",
                R"(plan.updates['emb/weight'].clip: expected "off")");
  check_rejects(R"({"encoding": "dense", "aggregator": "sum", "clip": {"norm": 0}})",
                "plan.updates['emb/weight'].clip.norm: expected a finite number > 0");
  check_rejects(R"({"encoding": "dense", "aggregator": "sum", "clip": {"rms": "1"}})",
                "plan.updates['emb/weight'].clip.rms: expected a finite number > 0");
  check_rejects(
      R"({"encoding": "dense", "aggregator": "count", "clip": {"rms": 1}})",
      R"(plan.updates['emb/weight'].clip: count takes no clip other than "off" (it has no values))");
  check_rejects(
      R"({"encoding": "dense", "aggregator": "clipped_weighted_mean", "clip_norm": 1, "clip": {"rms": 1}})",
      "clip: clipped_weighted_mean takes no clip other than \"off\" (it clips by its clip_norm)");
  const auto clip = [](const std::string& value) {
    return R"({"encoding": "dense", "aggregator": "sum", "clip": )" + value + "}";
  };
  check_rejects(clip(R"({"quantile": 0.5})"), R"(plan.updates['emb/weight'].clip: expected "off")");
  check_rejects(clip(R"({"rms": 1, "quantile": 0.5, "step": 1})"), R"(unknown field 'step')");
  check_rejects(clip(R"({"rms": 1, "learning_rate": 0.2})"),
                R"(plan.updates['emb/weight'].clip.learning_rate: only applies with "quantile")");
  for (const char* quantile : {"0", "1", "-0.5", "1.5", R"("0.5")", "null"}) {
    INFO(quantile);
    check_rejects(clip(R"({"rms": 1, "quantile": )" + std::string(quantile) + "}"),
                  "plan.updates['emb/weight'].clip.quantile: expected a number in (0, 1)");
  }
  for (const char* rate : {"0", "-1", "10.5", R"("1")"}) {
    INFO(rate);
    check_rejects(
        clip(R"({"rms": 1, "quantile": 0.5, "learning_rate": )" + std::string(rate) + "}"),
        "plan.updates['emb/weight'].clip.learning_rate: expected a number in (0, 10]");
  }
  check_rejects(clip(R"({"norm": 1e13, "quantile": 0.5})"),
                "plan.updates['emb/weight'].clip.norm: an adaptive clip's initial bound must be in "
                "[1e-12, 1e12]");
  check_rejects(clip(R"({"rms": 0, "quantile": 0.5})"),
                "plan.updates['emb/weight'].clip.rms: expected a finite number > 0");
  for (const char* bad : {"0", "-1", "1.5", R"("on")", "9007199254740993", "null"}) {
    INFO(bad);
    CHECK_THROWS_MATCHES(
        core::parse_update_plan(std::string(R"({"max_examples_per_report": )") + bad + "}"),
        InvalidInput,
        MessageContains("plan.max_examples_per_report: expected an integer in [1, 2^53], "
                        "\"off\" or {\"initial\": N, \"median_multiple\": k}"));
  }
  const auto cap = [](const std::string& value) {
    return core::parse_update_plan(R"({"max_examples_per_report": )" + value + "}");
  };
  CHECK_THROWS_MATCHES(cap(R"({"initial": 10, "median_multiple": 2, "quantile": 0.5})"),
                       InvalidInput, MessageContains("unknown field 'quantile'"));
  CHECK_THROWS_MATCHES(cap(R"({"median_multiple": 2})"), InvalidInput,
                       MessageContains("plan.max_examples_per_report.initial: missing"));
  CHECK_THROWS_MATCHES(cap(R"({"initial": 10})"), InvalidInput,
                       MessageContains("plan.max_examples_per_report.median_multiple: missing"));
  for (const char* initial : {"0", "1.5", "9007199254740993", R"("10")"}) {
    INFO(initial);
    CHECK_THROWS_MATCHES(
        cap(R"({"median_multiple": 2, "initial": )" + std::string(initial) + "}"), InvalidInput,
        MessageContains("plan.max_examples_per_report.initial: expected an integer in [1, 2^53]"));
  }
  for (const char* multiple : {"0.5", "0", "-2", "1e7", R"("2")", "null"}) {
    INFO(multiple);
    CHECK_THROWS_MATCHES(
        cap(R"({"initial": 10, "median_multiple": )" + std::string(multiple) + "}"), InvalidInput,
        MessageContains("plan.max_examples_per_report.median_multiple: expected a number in "
                        "[1, 1e6]"));
  }
  const auto row_clip = [](const std::string& encoding, const std::string& clip_json,
                           const std::string& value) {
    return R"({"encoding": ")" + encoding + R"(", "aggregator": "mean_over_contributors", )" +
           R"("clip": )" + clip_json + R"(, "row_clip": )" + value + "}";
  };
  for (const char* bad : {"0.5", "0", "1e7", R"("on")", "null"}) {
    INFO(bad);
    check_rejects(row_clip("row_sparse", R"({"rms": 1})", bad),
                  R"(plan.updates['emb/weight'].row_clip: expected a number in [1, 1e6] or "off")");
  }
  for (const auto& [encoding, clip_json] :
       std::vector<std::pair<std::string, std::string>>{{"dense", R"({"rms": 1})"},
                                                        {"coo", R"({"rms": 1})"},
                                                        {"row_sparse", R"({"norm": 1})"},
                                                        {"row_sparse", R"("off")"}}) {
    INFO(encoding << " " << clip_json);
    check_rejects(
        row_clip(encoding, clip_json, "10"),
        "plan.updates['emb/weight'].row_clip: only applies to a row_sparse tensor with an "
        "rms clip");
  }
}

TEST_CASE("update_plan_robust_defaults_cap_examples_adaptively_and_clip_sparse_rows") {
  const core::UpdatePlan defaults = core::parse_update_plan(
      plan_with(R"({"encoding": "row_sparse", "aggregator": "mean_over_contributors"})"));
  CHECK(defaults.max_examples_per_report == core::kDefaultMaxExamplesPerReport);
  REQUIRE(defaults.adaptive_example_cap);
  CHECK(defaults.adaptive_example_cap->median_multiple == core::kDefaultExampleCapMedianMultiple);
  CHECK(core::kDefaultExampleCapMedianMultiple == 2.0);
  CHECK(defaults.tensors.at(0).op.row_clip == core::kDefaultRowClip);
  CHECK(core::kDefaultRowClip == 10.0);

  const core::UpdatePlan chosen = core::parse_update_plan(std::string(
      R"({"max_examples_per_report": {"initial": 500, "median_multiple": 1.5}, "updates": {
          "e": {"encoding": "row_sparse", "aggregator": "sum", "row_clip": 3}}})"));
  CHECK(chosen.max_examples_per_report == 500);
  CHECK(chosen.adaptive_example_cap->median_multiple == 1.5);
  CHECK(chosen.tensors.at(0).op.row_clip == 3.0);

  const core::UpdatePlan off = core::parse_update_plan(std::string(
      R"({"max_examples_per_report": 500, "updates": {
          "e": {"encoding": "row_sparse", "aggregator": "sum", "row_clip": "off"},
          "d": {"encoding": "dense", "aggregator": "sum", "row_clip": "off"},
          "f": {"encoding": "row_sparse", "aggregator": "sum", "clip": {"norm": 1}}}})"));
  CHECK_FALSE(off.adaptive_example_cap);
  for (const auto& t : off.tensors) CHECK(t.op.row_clip == 0.0);  // off, or not applicable
}

}  // namespace
}  // namespace fedleaf

namespace fedleaf {
namespace {

std::uint64_t min_contributors_of(const std::string& entry) {
  return core::parse_update_plan(plan_with(entry)).tensors.at(0).op.min_contributors;
}

TEST_CASE("update_plan_min_contributors_defaults_on_for_mean_over_contributors_only") {
  CHECK(min_contributors_of(
            R"({"encoding": "row_sparse", "aggregator": "mean_over_contributors"})") ==
        core::kDefaultMinContributors);
  CHECK(core::kDefaultMinContributors == 2);
  for (const char* op : {"sum", "weighted_mean", "count"}) {
    INFO(op);
    CHECK(min_contributors_of(R"({"encoding": "coo", "aggregator": ")" + std::string(op) +
                              R"("})") == 0);
  }
}

TEST_CASE("update_plan_min_contributors_can_be_set_or_turned_off_explicitly") {
  const std::string moc = R"({"encoding": "row_sparse", "aggregator": "mean_over_contributors", )";
  CHECK(min_contributors_of(moc + R"("min_contributors": 5})") == 5);
  CHECK(min_contributors_of(moc + R"("min_contributors": "off"})") == 0);
  CHECK(min_contributors_of(moc + R"("min_contributors": 1})") == 0);  // one report: off
  CHECK(min_contributors_of(moc + R"("min_contributors": 2147483648})") == 2147483648ull);
  CHECK(min_contributors_of(
            R"({"encoding": "coo", "aggregator": "sum", "min_contributors": "off"})") == 0);
}

TEST_CASE("update_plan_rejects_bad_min_contributors_naming_the_path_and_rule") {
  const std::string moc = R"({"encoding": "row_sparse", "aggregator": "mean_over_contributors", )";
  for (const char* bad : {"0", "-1", "2.5", "\"2\"", "\"on\"", "2147483649", "null"}) {
    INFO(bad);
    check_rejects(
        moc + R"("min_contributors": )" + bad + "}",
        R"(plan.updates['emb/weight'].min_contributors: expected an integer in [1, 2^31] or "off")");
  }
  check_rejects(
      R"({"encoding": "dense", "aggregator": "weighted_mean", "min_contributors": 2})",
      R"(plan.updates['emb/weight'].min_contributors: weighted_mean takes no min_contributors other than "off")");
}

}  // namespace
}  // namespace fedleaf

namespace fedleaf {
namespace {

using core::IdsCompression;
using core::ValuesCompression;

TEST_CASE("update_plan_reads_compression_and_download_values_with_f32_i64_defaults") {
  const core::UpdatePlan plan = core::parse_update_plan(std::string(R"({"updates": {
    "emb/weight": {"encoding": "row_sparse", "aggregator": "mean_over_contributors",
                   "compression": {"values": "int8", "ids": "delta_varint"},
                   "download_values": "f16"},
    "out/weight": {"encoding": "dense", "aggregator": "weighted_mean",
                   "compression": {"values": "f16"}},
    "out/bias": {"encoding": "dense", "aggregator": "weighted_mean"},
    "c": {"encoding": "coo", "aggregator": "sum", "compression": {"ids": "u32"}}}})"));
  CHECK(plan.find("c")->compression.ids == IdsCompression::kU32);
  const core::TensorUpdatePlan* emb = plan.find("emb/weight");
  CHECK(emb->compression ==
        core::TensorCompression{ValuesCompression::kInt8, IdsCompression::kDeltaVarint});
  CHECK(emb->download_values == ValuesCompression::kF16);
  CHECK(plan.find("out/weight")->compression ==
        core::TensorCompression{ValuesCompression::kF16, IdsCompression::kI64});
  CHECK(plan.find("out/bias")->compression.plain());
  CHECK(plan.find("out/bias")->download_values == ValuesCompression::kF32);
}

// Regression: an entry's unknown field was skipped, so a typo ("min_contributor", "downlaod")
// aggregated and downloaded with the default on every leaf, silently.
TEST_CASE("update_plan_refuses_an_unknown_field_of_an_entry_naming_it_and_the_fields") {
  check_rejects(R"({"encoding": "row_sparse", "aggregator": "mean_over_contributors",
                    "min_contributor": 3})",
                "plan.updates['emb/weight']: unknown field 'min_contributor' (the fields are "
                "encoding, aggregator, clip_norm, clip, row_clip, min_contributors, download, "
                "max_select_rows, select_padding, compression, download_values)");
}

TEST_CASE("update_plan_refuses_unknown_compressions_naming_the_tensor_and_the_values") {
  const std::string row = R"({"encoding": "row_sparse", "aggregator": "sum", )";
  check_rejects(row + R"("compression": {"values": "int4"}})",
                R"(plan.updates['emb/weight'].compression.values: must be "f32", "f16" or "int8")");
  check_rejects(
      row + R"("compression": {"ids": "u16"}})",
      R"(plan.updates['emb/weight'].compression.ids: must be "i64", "u32" or "delta_varint")");
  check_rejects(R"({"encoding": "dense", "aggregator": "sum", "compression": {"ids": "u32"}})",
                R"(compression.ids: "u32" needs a sparse encoding (a dense update has no ids))");
  check_rejects(
      row + R"("compression": {"value": "f16"}})",
      R"(plan.updates['emb/weight'].compression: expected {"values": ..., "ids": ...}; unknown field 'value')");
  check_rejects(row + R"("compression": "int8"})",
                R"(plan.updates['emb/weight'].compression: expected {"values": ..., "ids": ...})");
  check_rejects(row + R"("download_values": "int8"})",
                R"(plan.updates['emb/weight'].download_values: must be "f32" or "f16")");
  check_rejects(
      R"({"encoding": "dense", "aggregator": "sum", "compression": {"ids": "delta_varint"}})",
      R"(plan.updates['emb/weight'].compression.ids: "delta_varint" needs encoding "row_sparse" (it codes sorted row ids), not 'dense')");
}

}  // namespace
}  // namespace fedleaf
