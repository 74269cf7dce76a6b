#include "core/aggregation/updates/update_plan.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/text/text_format.h"

namespace fedleaf::core {
namespace {

using namespace plan_json;

// An integer in [1, max]; `path` is the field's own path.
std::uint64_t positive_integer(const json& v, const std::string& path, std::uint64_t max,
                               const char* max_text) {
  const std::string rule = std::string("expected an integer in [1, ") + max_text + "]";
  if (!v.is_number_integer()) fail(path, rule);
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u < 1 || u > max) fail(path, rule);
    return u;
  }
  const auto s = v.get<std::int64_t>();
  if (s < 1 || static_cast<std::uint64_t>(s) > max) fail(path, rule);
  return static_cast<std::uint64_t>(s);
}

std::optional<double> optional_positive_number(const json& object, const std::string& path,
                                               const char* key) {
  const json* v = find_field(object, key);
  if (v == nullptr) return std::nullopt;
  const double d = v->is_number() ? v->get<double>() : 0.0;
  if (!v->is_number() || !std::isfinite(d) || d <= 0.0) {
    fail(path + "." + key, "expected a finite number > 0");
  }
  return d;
}

DownloadMode parse_download(const json& spec, const std::string& path, UpdateEncoding encoding) {
  const json* v = find_field(spec, "download");
  if (v == nullptr) {
    return encoding == UpdateEncoding::kRowSparse ? DownloadMode::kSelect : DownloadMode::kFull;
  }
  const std::string where = path + ".download";
  if (!v->is_string()) fail(where, "must be \"full\" or \"select\"");
  const std::string name = v->get<std::string>();
  const auto mode = std::find_if(kDownloadModes.begin(), kDownloadModes.end(),
                                 [&](const auto& m) { return name == m.first; });
  if (mode == kDownloadModes.end()) fail(where, "must be \"full\" or \"select\"");
  if (mode->second == DownloadMode::kFull) return DownloadMode::kFull;
  if (encoding != UpdateEncoding::kRowSparse) {
    fail(where, "\"select\" needs encoding \"row_sparse\" (a leaf selects whole rows), not " +
                    in_quotes(update_encoding_name(encoding)));
  }
  return DownloadMode::kSelect;
}

SelectPadding parse_select_padding(const json& v, const std::string& where) {
  constexpr const char* kShape = "expected {\"multiple\": N} or {\"count\": N}";
  if (!v.is_object() || v.size() != 1 || !is_known_field(v.begin().key(), kSelectPaddingFields)) {
    fail(where, kShape);
  }
  SelectPadding padding;
  if (const json* multiple = find_field(v, "multiple")) {
    padding.rule = SelectPadding::Rule::kMultiple;
    padding.n = positive_integer(*multiple, where + ".multiple", std::uint64_t{1} << 31, "2^31");
  } else if (const json* count = find_field(v, "count")) {
    padding.rule = SelectPadding::Rule::kCount;
    padding.n = positive_integer(*count, where + ".count", std::uint64_t{1} << 31, "2^31");
  } else {
    fail(where, kShape);
  }
  return padding;
}

// "compression": {"values": "f32" | "f16" | "int8", "ids": "i64" | "u32" | "delta_varint"}, both
// optional.
TensorCompression parse_compression(const json& spec, const std::string& path,
                                    UpdateEncoding encoding) {
  TensorCompression out;
  const json* v = find_field(spec, "compression");
  if (v == nullptr) return out;
  const std::string where = path + ".compression";
  constexpr const char* kShape = "expected {\"values\": ..., \"ids\": ...}";
  if (!v->is_object()) fail(where, kShape);
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (!is_known_field(it.key(), kCompressionFields)) {
      fail(where, std::string(kShape) + "; unknown field " + in_quotes(it.key()));
    }
  }
  if (const json* values = find_field(*v, "values")) {
    const auto parsed =
        values->is_string() ? parse_values_compression(values->get<std::string>()) : std::nullopt;
    if (!parsed) fail(where + ".values", "must be \"f32\", \"f16\" or \"int8\"");
    out.values = *parsed;
  }
  if (const json* ids = find_field(*v, "ids")) {
    const auto parsed =
        ids->is_string() ? parse_ids_compression(ids->get<std::string>()) : std::nullopt;
    if (!parsed) fail(where + ".ids", "must be \"i64\", \"u32\" or \"delta_varint\"");
    if (*parsed == IdsCompression::kU32 && encoding == UpdateEncoding::kDense) {
      fail(where + ".ids", "\"u32\" needs a sparse encoding (a dense update has no ids)");
    }
    if (*parsed == IdsCompression::kDeltaVarint && encoding != UpdateEncoding::kRowSparse) {
      fail(where + ".ids",
           "\"delta_varint\" needs encoding \"row_sparse\" (it codes sorted row ids), not " +
               in_quotes(update_encoding_name(encoding)));
    }
    out.ids = *parsed;
  }
  return out;
}

// "download_values": "f32" | "f16".
ValuesCompression parse_download_values(const json& spec, const std::string& path) {
  const json* v = find_field(spec, "download_values");
  if (v == nullptr) return ValuesCompression::kF32;
  const auto parsed =
      v->is_string() ? parse_values_compression(v->get<std::string>()) : std::nullopt;
  if (!parsed || std::find(std::begin(kDownloadValues), std::end(kDownloadValues), *parsed) ==
                     std::end(kDownloadValues)) {
    fail(path + ".download_values", "must be \"f32\" or \"f16\"");
  }
  return *parsed;
}

// A robust clip: its bound (the first round's, when adaptive) and, when adaptive, its rule.
struct ParsedClip {
  UpdateClip clip;
  std::optional<AdaptiveClip> adaptive;
};

// A number in (low, high] (high_open: in (low, high)); `where` is the field's own path.
double number_in(const json& object, const std::string& where, const char* key, double low,
                 double high, bool high_open, const char* rule) {
  const json* v = find_field(object, key);
  const double d = v->is_number() ? v->get<double>() : 0.0;
  const bool below_high = high_open ? d < high : d <= high;
  if (!v->is_number() || !std::isfinite(d) || d <= low || !below_high) {
    fail(where + "." + key, rule);
  }
  return d;
}

// "clip": "off" | {"norm": F} | {"rms": F} (fixed), or either with "quantile": γ and optionally
// "learning_rate": η (adaptive, F its initial bound). Default: adaptive rms with the kDefaultClip*
// settings for the operators with values that do not clip by themselves.
ParsedClip parse_clip(const json& spec, const std::string& path, SparseSumOperator op) {
  const bool clippable = operator_rules(op).takes_robust_clip();
  const json* v = find_field(spec, "clip");
  if (v == nullptr) {
    if (!clippable) return {};
    return {UpdateClip{ClipKind::kRms, kDefaultClipRms},
            AdaptiveClip{kDefaultClipQuantile, kDefaultClipLearningRate}};
  }
  const std::string where = path + ".clip";
  if (v->is_string() && v->get<std::string>() == "off") return {};
  if (!clippable) {
    fail(where, std::string(operator_name(op)) + " takes no clip other than \"off\" (" +
                    (tracks_values(op) ? "it clips by its clip_norm" : "it has no values") + ")");
  }
  constexpr const char* kShape =
      "expected \"off\", {\"norm\": F} or {\"rms\": F} with F > 0, optionally with "
      "\"quantile\" (adaptive) and \"learning_rate\"";
  if (!v->is_object()) fail(where, kShape);
  const bool norm = find_field(*v, "norm") != nullptr;
  const bool rms = find_field(*v, "rms") != nullptr;
  if (norm == rms) fail(where, kShape);
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string& key = it.key();
    if (!is_known_field(key, kClipFields)) {
      fail(where, std::string(kShape) + "; unknown field " + in_quotes(key));
    }
  }
  ParsedClip out;
  const char* kind = norm ? "norm" : "rms";
  out.clip = {norm ? ClipKind::kNorm : ClipKind::kRms, *optional_positive_number(*v, where, kind)};
  const bool adaptive = find_field(*v, "quantile") != nullptr;
  if (!adaptive) {
    if (find_field(*v, "learning_rate") != nullptr) {
      fail(where + ".learning_rate", "only applies with \"quantile\" (an adaptive clip)");
    }
    return out;
  }
  AdaptiveClip rule;
  rule.quantile = number_in(*v, where, "quantile", 0.0, 1.0, true, "expected a number in (0, 1)");
  rule.learning_rate =
      find_field(*v, "learning_rate") == nullptr
          ? kDefaultClipLearningRate
          : number_in(*v, where, "learning_rate", 0.0, 10.0, false, "expected a number in (0, 10]");
  if (out.clip.bound < kMinAdaptiveClipBound || out.clip.bound > kMaxAdaptiveClipBound) {
    fail(where + "." + kind, "an adaptive clip's initial bound must be in [1e-12, 1e12]");
  }
  out.adaptive = rule;
  return out;
}

// "row_clip": "off" | k in [1, 1e6]: row_sparse tensors with an rms clip only; default
// kDefaultRowClip for them, off for every other tensor.
double parse_row_clip(const json& spec, const std::string& path, UpdateEncoding encoding,
                      ClipKind clip) {
  const bool applies = encoding == UpdateEncoding::kRowSparse && clip == ClipKind::kRms;
  const json* v = find_field(spec, "row_clip");
  if (v == nullptr) return applies ? kDefaultRowClip : 0.0;
  const std::string where = path + ".row_clip";
  if (v->is_string() && v->get<std::string>() == "off") return 0.0;
  if (!applies) {
    fail(where,
         "only applies to a row_sparse tensor with an rms clip (its rows are clipped at a "
         "multiple of the rms bound); use \"off\"");
  }
  const double k = v->is_number() ? v->get<double>() : 0.0;
  if (!v->is_number() || !(k >= 1.0 && k <= kMaxRowClip)) {
    fail(where, "expected a number in [1, 1e6] or \"off\"");
  }
  return k;
}

// "min_contributors": "off" | N in [1, 2^31] (1 is off too); default kDefaultMinContributors
// for mean_over_contributors, which alone takes it.
std::uint64_t parse_min_contributors(const json& spec, const std::string& path,
                                     SparseSumOperator op) {
  const bool applies = operator_rules(op).takes_min_contributors;
  const json* v = find_field(spec, "min_contributors");
  if (v == nullptr) return applies ? kDefaultMinContributors : 0;
  const std::string where = path + ".min_contributors";
  if (v->is_string() && v->get<std::string>() == "off") return 0;
  if (!applies) {
    fail(where,
         std::string(operator_name(op)) + " takes no min_contributors other than \"off\" (only " +
             operator_names([](const OperatorRules& r) { return r.takes_min_contributors; }) +
             " has per-row contributors)");
  }
  constexpr std::int64_t kMax = std::int64_t{1} << 31;
  const bool in_range =
      v->is_number_unsigned()
          ? v->get<std::uint64_t>() >= 1 && v->get<std::uint64_t>() <= std::uint64_t{kMax}
      : v->is_number_integer() ? v->get<std::int64_t>() >= 1 && v->get<std::int64_t>() <= kMax
                               : false;
  if (!in_range) fail(where, "expected an integer in [1, 2^31] or \"off\"");
  const auto k = static_cast<std::uint64_t>(v->get<std::int64_t>());
  return k == 1 ? 0 : k;
}

// "max_examples_per_report": N | "off" | {"initial": N, "median_multiple": k}; default adaptive
// (kDefaultMaxExamplesPerReport, kDefaultExampleCapMedianMultiple).
void parse_max_examples(const json& plan, UpdatePlan& out) {
  const json* v = find_field(plan, "max_examples_per_report");
  const std::string where = "plan.max_examples_per_report";
  constexpr std::uint64_t kMax = std::uint64_t{1} << 53;
  if (v == nullptr) {
    out.max_examples_per_report = kDefaultMaxExamplesPerReport;
    out.adaptive_example_cap = AdaptiveExampleCap{kDefaultExampleCapMedianMultiple};
    return;
  }
  if (v->is_string() && v->get<std::string>() == "off") {
    out.max_examples_per_report = 0;
    return;
  }
  constexpr const char* kShape =
      "expected an integer in [1, 2^53], \"off\" or {\"initial\": N, \"median_multiple\": k}";
  if (!v->is_number_integer() && !v->is_object()) fail(where, kShape);
  if (v->is_number_integer()) {
    const bool in_range = v->is_number_unsigned()
                              ? v->get<std::uint64_t>() >= 1 && v->get<std::uint64_t>() <= kMax
                              : v->get<std::int64_t>() >= 1;
    if (!in_range) fail(where, kShape);
    out.max_examples_per_report = v->get<std::uint64_t>();
    return;
  }
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (!is_known_field(it.key(), kExampleCapFields)) {
      fail(where, std::string(kShape) + "; unknown field " + in_quotes(it.key()));
    }
  }
  const json* initial = find_field(*v, "initial");
  if (initial == nullptr) fail(where + ".initial", "missing (the first round's cap)");
  out.max_examples_per_report = positive_integer(*initial, where + ".initial", kMax, "2^53");
  const json* multiple = find_field(*v, "median_multiple");
  if (multiple == nullptr) {
    fail(where + ".median_multiple", "missing (the cap as a multiple of the median claim)");
  }
  const double k = multiple->is_number() ? multiple->get<double>() : 0.0;
  if (!multiple->is_number() || !(k >= 1.0 && k <= kMaxExampleCapMedianMultiple)) {
    fail(where + ".median_multiple", "expected a number in [1, 1e6]");
  }
  out.adaptive_example_cap = AdaptiveExampleCap{k};
}

TensorUpdatePlan parse_tensor(const std::string& name, const json& spec) {
  TensorUpdatePlan out;
  out.name = name;
  out.path = update_plan_path(name);
  const std::string& path = out.path;
  if (!spec.is_object()) fail(path, "expected an object");
  check_known_fields(spec, path, kTensorUpdateFields);
  out.encoding = parse_update_encoding(get_string(spec, path, "encoding"), path + ".encoding");
  const std::string aggregator = get_string(spec, path, "aggregator");
  const std::optional<double> clip_norm = optional_positive_number(spec, path, "clip_norm");
  // The operator list lives with the operators: one list for every reader of a plan.
  const SparseSumOperator op = parse_operator_name(aggregator, path + ".aggregator");
  if (operator_rules(op).clips_to_norm && !clip_norm) {
    fail(path + ".clip_norm", "missing (" + clip_norm_rule(op) + ")");
  }
  out.op = parse_operator_spec(aggregator, clip_norm, path + ".aggregator");
  ParsedClip clip = parse_clip(spec, path, out.op.op);
  out.op.clip = clip.clip;
  out.adaptive_clip = clip.adaptive;
  out.op.min_contributors = parse_min_contributors(spec, path, out.op.op);
  out.op.row_clip = parse_row_clip(spec, path, out.encoding, out.op.clip.kind);
  out.download = parse_download(spec, path, out.encoding);
  const bool select = out.download == DownloadMode::kSelect;
  if (const json* cap = find_field(spec, "max_select_rows")) {
    if (!select) fail(path + ".max_select_rows", "only applies with \"download\": \"select\"");
    out.max_select_rows =
        positive_integer(*cap, path + ".max_select_rows", std::uint64_t{1} << 53, "2^53");
  }
  if (const json* padding = find_field(spec, "select_padding")) {
    if (!select) fail(path + ".select_padding", "only applies with \"download\": \"select\"");
    out.select_padding = parse_select_padding(*padding, path + ".select_padding");
  }
  out.compression = parse_compression(spec, path, out.encoding);
  out.download_values = parse_download_values(spec, path);
  return out;
}

}  // namespace

const TensorUpdatePlan* UpdatePlan::find(std::string_view name) const {
  const auto it = std::lower_bound(
      tensors.begin(), tensors.end(), name,
      [](const TensorUpdatePlan& t, std::string_view n) { return std::string_view(t.name) < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

UpdatePlan parse_update_plan(const json& plan) {
  if (!plan.is_object()) fail("plan", "expected a JSON object");
  UpdatePlan out;
  parse_max_examples(plan, out);
  const json* updates = find_field(plan, "updates");
  if (updates == nullptr) return out;
  if (!updates->is_object()) fail("plan.updates", "expected an object");
  // json objects iterate in key order, so `tensors` comes out sorted.
  for (auto it = updates->begin(); it != updates->end(); ++it) {
    out.tensors.push_back(parse_tensor(it.key(), *it));
  }
  return out;
}

UpdatePlan parse_update_plan(const std::string& plan_json) {
  return parse_update_plan(parse_text(plan_json));
}

std::string_view download_mode_name(DownloadMode mode) {
  return mode == DownloadMode::kSelect ? "select" : "full";
}

std::string update_plan_path(std::string_view tensor_name) {
  return "plan.updates[" + in_quotes(tensor_name) + "]";
}

}  // namespace fedleaf::core
