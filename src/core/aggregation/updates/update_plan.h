// The plan's "updates" section, parsed and validated once for every reader (the training
// session, the round aggregator, the server, the wasm bindings): per tensor, how its update
// travels, how it is aggregated and how a leaf downloads it.
//
//   const UpdatePlan updates = parse_update_plan(plan_json);
//   const TensorUpdatePlan* emb = updates.find("emb/weight");
//   if (emb && emb->download == DownloadMode::kSelect) { /* POST ids to model:select */ }
//
// Schema of one entry, "updates": {"<tensor>": {...}}:
//
//   "encoding": "dense" | "row_sparse" | "coo"                         required
//   "aggregator": "sum" | "weighted_mean" | "mean_over_contributors"
//               | "count" | "clipped_weighted_mean"                     required
//   "clip_norm": F > 0, finite        required by clipped_weighted_mean, validated wherever given
//   "download": "full" | "select"     only "full" unless the encoding is row_sparse;
//                                     default "select" for row_sparse, "full" otherwise
//   "max_select_rows": N in [1, 2^53] only with "select"; absent = no cap
//   "select_padding": {"multiple": N} | {"count": N}, N in [1, 2^31]    only with "select"
//   "compression": {"values": "f32" | "f16" | "int8", "ids": "i64" | "u32" | "delta_varint"}
//                                     how the leaf writes its upload of the tensor
//                                     (core/wire/update_compression.h); default f32 and i64 (the
//                                     I64 ids every sparse tuple has); "u32" needs a sparse
//                                     encoding, "delta_varint" encoding "row_sparse". The server
//                                     reads any of them.
//   "download_values": "f32" | "f16"  the dtype of the tensor's values in a model:select answer;
//                                     default "f32"
//
//   "clip": "off" | {"norm": F} | {"rms": F}, F > 0, finite             (a fixed bound)
//         | {"norm" | "rms": F, "quantile": γ in (0, 1), "learning_rate": η in (0, 10]}
//                                     robust clipping of each report's update (UpdateClip in
//                                     sparse_sum_operator.h). With "quantile" the bound is
//                                     adaptive (adaptive_clip.h): F in [1e-12, 1e12] is the first
//                                     round's bound, and each round's bound follows the γ-quantile
//                                     of the reports' sizes; "learning_rate" defaults to 1.
//                                     Default {"rms": 0.01, "quantile": 0.9, "learning_rate": 1}
//                                     for sum, weighted_mean and mean_over_contributors; only
//                                     "off" for count (no values) and clipped_weighted_mean
//                                     (clip_norm)
//   "row_clip": "off" | k in [1, 1e6]  row_sparse tensors with an "rms" clip only: each row of a
//                                     report whose rms exceeds k × the round's rms bound is
//                                     scaled down to it before the report is clipped
//                                     (sparse_sum_operator.h, "Row clip"); default 10 for them
//   "min_contributors": "off" | N in [1, 2^31]
//                                     mean_over_contributors only: a row (key) changes only
//                                     when at least N distinct reports sent it in the round
//                                     (operators/mean_over_contributors.h); default 2; 1 or
//                                     "off" turns it off; other operators take only "off"
//
// Plan level: "max_examples_per_report": N in [1, 2^53] | "off"
//                                   | {"initial": N in [1, 2^53], "median_multiple": k in [1, 1e6]}
// A report claiming more examples than the round's cap is weighted as the cap (and counted as
// capped). N is a fixed cap; the object form is adaptive (adaptive_example_cap.h): the first
// round's cap is "initial", each later round's is k × the median claim of the round before.
// Default {"initial": 10000, "median_multiple": 2}.
//
// Robust defaults, and why they do not hurt honest training. The clip is adaptive because no
// fixed bound fits: an honest report's size depends on the optimizer, its learning rate, the
// local steps and the tensor, and shrinks as training converges (the demo job, Adam 0.03, ~10
// local steps: rms 0.004-0.05 for embedding rows, 0.05-0.19 for the dense layer, per report and
// tensor), while a bound far above honest sizes lets a report scaled x1e6 move the aggregate as
// much as many honest ones (a fixed {"rms": 1} left the demo at 0.90 of its clean accuracy
// against such a leaf). Following the 0.9-quantile, the bound settles near the largest honest
// reports, so most honest reports are never clipped and an inflated one counts like a large
// honest one. It starts at rms 0.01, at or below every honest size measured, because a bound too
// low costs a few rounds of smaller steps while one too high lets an attacker in; with γ = 0.9
// the rule loosens fast (x e^0.9 per round while every report is clipped, so 0.01 reaches the
// dense layer's 0.15 in 3 rounds) and tightens by at most x e^-0.1 per round, about as fast as
// honest sizes shrink. η = 1 (the paper uses 0.2 over thousands of rounds) makes it settle within
// the first rounds of a short job. The bound is fixed within a round, because the accumulators
// fold each report as it arrives (streaming, checkpointed) and cannot rescale a report already
// folded; it changes between rounds only. The example cap is adaptive for the same reason: no
// fixed number is both above every honest leaf's data and close to a typical one, and a report
// claiming 2^53 examples weighs as much as the cap (at a fixed 10000, 2/3 of every weighted mean
// of the demo, whose leaves hold ~300 examples each). The first round's 10000 is far above a
// browser leaf's data; from the second round on a report weighs at most twice the round before's
// median report, which fewer than half the leaves cannot raise (adaptive_example_cap.h).
// min_contributors 2 keeps one leaf from setting (or publishing) a row no other leaf sent that
// round; rows only one leaf sent simply wait for a round in which a second one sends them, so the
// demo loses little (16 non-IID leaves, 20 rounds, scripts/bench.sh poison, clean job: 98.76% eval
// accuracy with it, 99.09% without, both under the former fixed clip).
//
// Download policy. "full": the leaf downloads the whole tensor with the model. "select": the leaf
// POSTs the row ids its data touch to model:select and receives only those rows. When its data
// touch more than max_select_rows rows it downloads the full tensor instead (a request that large
// would cost more than the tensor and say more about the leaf's data). select_padding adds random
// row ids to the request, up to the next multiple of N ("multiple") or up to at least N rows
// ("count"), so the request's size says less about the leaf's data.
//
// A field not listed is an error naming it and the entry's fields (kTensorUpdateFields).
//
// Every error is InvalidInput naming the JSON path and the rule, e.g.
// "plan.updates['emb/weight'].download: must be \"full\" or \"select\"".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/aggregation/operators/sparse_sum_operator.h"
#include "core/aggregation/operators/update_encoding.h"
#include "core/aggregation/robust/adaptive_clip.h"
#include "core/aggregation/robust/adaptive_example_cap.h"
#include "core/privacy/private_sum.h"
#include "core/wire/update_compression.h"

namespace fedleaf::core {

enum class DownloadMode { kFull, kSelect };

// The fields of the updates' objects and the names of their choices not listed with their own
// types (encodings: update_encoding.h; aggregators: operators/operator_table.h; compressions:
// core/wire/update_compression.h): what parse_update_plan checks, and what the plan's schema
// (core/train/plan_schema.h) lists.
inline constexpr std::array kTensorUpdateFields{
    "encoding",       "aggregator",       "clip_norm",      "clip",
    "row_clip",       "min_contributors", "download",       "max_select_rows",
    "select_padding", "compression",      "download_values"};
inline constexpr std::array kCompressionFields{"values", "ids"};
inline constexpr std::array kClipFields{"norm", "rms", "quantile", "learning_rate"};
inline constexpr std::array kSelectPaddingFields{"multiple", "count"};
inline constexpr std::array kExampleCapFields{"initial", "median_multiple"};
inline constexpr std::array kDownloadModes{std::pair{"full", DownloadMode::kFull},
                                           std::pair{"select", DownloadMode::kSelect}};
// What a model:select answer's values may be (int8 is an upload's only).
inline constexpr ValuesCompression kDownloadValues[] = {ValuesCompression::kF32,
                                                        ValuesCompression::kF16};

// Random ids a leaf adds to its model:select request.
struct SelectPadding {
  enum class Rule { kNone, kMultiple, kCount };
  Rule rule = Rule::kNone;
  std::uint64_t n = 0;  // kMultiple: pad to a multiple of n; kCount: pad to at least n ids

  friend bool operator==(const SelectPadding& a, const SelectPadding& b) {
    return a.rule == b.rule && a.n == b.n;
  }
  friend bool operator!=(const SelectPadding& a, const SelectPadding& b) { return !(a == b); }
};

// One entry of "updates".
struct TensorUpdatePlan {
  std::string name;
  UpdateEncoding encoding = UpdateEncoding::kDense;
  OperatorSpec op;  // operator, its clip_norm, and the robust clip (adaptive: its initial bound)
  // Set when the robust clip is adaptive: op.clip is then the bound of the population's first
  // round, and each later round's bound follows this rule (adaptive_clip.h).
  std::optional<AdaptiveClip> adaptive_clip;
  DownloadMode download = DownloadMode::kFull;
  std::uint64_t max_select_rows = 0;  // 0: no cap
  SelectPadding select_padding;
  TensorCompression compression;                                // of the leaf's upload
  ValuesCompression download_values = ValuesCompression::kF32;  // kF32 or kF16
  std::string path;  // "plan.updates['<name>']", for error messages
};

inline constexpr double kDefaultClipRms = 0.01;  // the initial bound of the default adaptive clip
inline constexpr double kDefaultClipQuantile = 0.9;
inline constexpr double kDefaultClipLearningRate = 1.0;
inline constexpr std::uint64_t kDefaultMaxExamplesPerReport = 10000;  // the first round's cap
inline constexpr double kDefaultExampleCapMedianMultiple = 2.0;
inline constexpr std::uint64_t kDefaultMinContributors = 2;
inline constexpr double kDefaultRowClip = 10.0;  // row_sparse rows: rms ≤ 10 × the rms bound
inline constexpr double kMaxRowClip = 1e6;

struct UpdatePlan {
  std::vector<TensorUpdatePlan> tensors;  // sorted by name, names unique
  // The round's cap (adaptive: the first round's, until with_example_cap sets a later round's).
  std::uint64_t max_examples_per_report = kDefaultMaxExamplesPerReport;  // 0: off
  // Set when the cap is adaptive (the default): each later round's cap follows this rule.
  std::optional<AdaptiveExampleCap> adaptive_example_cap;
  // Set by the server for a private population (never parsed from a plan; docs/design.md
  // "Privacy"): the round folds each report into a PrivateSum with these settings instead of
  // the operators, and publishes only RoundAggregator::private_aggregates (the noised sum).
  std::optional<PrivateSumSettings> privacy;

  const TensorUpdatePlan* find(std::string_view name) const;
};

// From the whole plan object. A plan without "updates" gives an empty UpdatePlan (evaluate
// plans have none); the readers that need tensors say so.
UpdatePlan parse_update_plan(const nlohmann::json& plan);
// Also rejects text that is not a JSON object ("plan: ...").
UpdatePlan parse_update_plan(const std::string& plan_json);

std::string_view download_mode_name(DownloadMode mode);
// "plan.updates['<name>']"
std::string update_plan_path(std::string_view tensor_name);

}  // namespace fedleaf::core
