#include "core/features/input_features.h"

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/text/text_format.h"

namespace fedleaf::core {
namespace {

using namespace plan_json;

constexpr std::size_t kMaxFieldName = 256;
constexpr std::size_t kMaxCrossFields = 8;
constexpr std::uint64_t kMaxBuckets = 0x7fffffffull;  // as the plan's num_buckets
constexpr std::uint64_t kMaxDenseDim = 1u << 16;

std::string field_name(const json& value, const std::string& path) {
  if (!value.is_string()) fail(path, "expected a field name (a string)");
  const auto& name = value.get_ref<const std::string&>();
  if (name.empty() || name.size() > kMaxFieldName) {
    fail(path, "a field name has 1 to " + std::to_string(kMaxFieldName) + " bytes");
  }
  return name;
}

// A finite number of the spec: the records' values are doubles, so is the arithmetic on them.
double finite_number(const json& value, const std::string& path) {
  if (!value.is_number()) fail(path, "expected a number");
  const double d = value.get<double>();
  if (!std::isfinite(d)) fail(path, "expected a finite number");
  return d;
}

void parse_hashing(const json& f, const std::string& path, InputFeatures& out) {
  out.hash_buckets = static_cast<std::uint32_t>(
      get_integer(f, path, "hash_buckets", std::nullopt, 1, kMaxBuckets));
  out.seed = static_cast<std::uint32_t>(get_integer(f, path, "seed", 0, 0));
}

NumericFeature parse_numeric_entry(const json& e, const std::string& path) {
  if (!e.is_object()) fail(path, "expected an object {\"field\": ..., \"transform\": ...}");
  check_known_fields(e, path, kNumericEntryFields);
  NumericFeature n;
  const json* field = find_field(e, "field");
  if (field == nullptr) fail(path + ".field", "missing");
  n.field = field_name(*field, path + ".field");
  if (const json* t = find_field(e, "transform")) {
    const std::string tpath = path + ".transform";
    if (t->is_string()) {
      n.transform = get_choice(e, path, "transform", "none", "transform", kNumericTransforms);
    } else if (t->is_object()) {
      check_known_fields(*t, tpath, kNumericTransformFields);
      const json* s = find_field(*t, "standardize");
      if (s == nullptr) fail(tpath + ".standardize", "missing");
      const std::string spath = tpath + ".standardize";
      if (!s->is_object()) fail(spath, "expected an object {\"mean\": M, \"std\": S}");
      check_known_fields(*s, spath, kStandardizeFields);
      const json* mean = find_field(*s, "mean");
      const json* std = find_field(*s, "std");
      if (mean == nullptr) fail(spath + ".mean", "missing");
      if (std == nullptr) fail(spath + ".std", "missing");
      n.transform = NumericTransform::kStandardize;
      n.mean = finite_number(*mean, spath + ".mean");
      n.std = finite_number(*std, spath + ".std");
      if (!(n.std > 0.0)) fail(spath + ".std", "must be > 0");
    } else {
      fail(tpath, "expected \"none\", \"log1p\" or {\"standardize\": {\"mean\": M, \"std\": S}}");
    }
  }
  if (const json* c = find_field(e, "clip")) {
    if (!c->is_array() || c->size() != 2) fail(path + ".clip", "expected [lo, hi]");
    n.clip = true;
    n.lo = finite_number((*c)[0], path + ".clip[0]");
    n.hi = finite_number((*c)[1], path + ".clip[1]");
    if (n.lo > n.hi) fail(path + ".clip", "lo must be <= hi");
  }
  if (const json* d = find_field(e, "default")) n.fallback = finite_number(*d, path + ".default");
  return n;
}

// The features of input `name` (its spec `input`, which has a "features" field).
InputFeatures parse_one(const std::string& name, const json& input, const json& f) {
  InputFeatures out;
  out.input = name;
  const std::string input_path = "plan.model.inputs." + name;
  out.path = input_path + ".features";
  const std::string& path = out.path;
  if (!f.is_object()) fail(path, "expected an object");
  const std::string type = get_string(input, input_path, "type");
  const int kinds = (f.contains("text") ? 1 : 0) + (f.contains("column") ? 1 : 0) +
                    (f.contains("cross") ? 1 : 0) + (f.contains("numeric") ? 1 : 0);
  if (kinds != 1) {
    fail(path, "expected exactly one of \"text\", \"column\", \"cross\" or \"numeric\"");
  }
  if (const json* text = find_field(f, "text")) {
    check_known_fields(f, path, kTextInputFields);
    out.kind = FeatureKind::kText;
    out.fields.push_back(field_name(*text, path + ".text"));
    out.text = parse_text_feature_options(f, path, /*check_fields=*/false);
  } else if (const json* column = find_field(f, "column")) {
    check_known_fields(f, path, kColumnInputFields);
    out.kind = FeatureKind::kColumn;
    out.fields.push_back(field_name(*column, path + ".column"));
    parse_hashing(f, path, out);
  } else if (const json* cross = find_field(f, "cross")) {
    check_known_fields(f, path, kCrossInputFields);
    out.kind = FeatureKind::kCross;
    if (!cross->is_array() || cross->size() < 2 || cross->size() > kMaxCrossFields) {
      fail(path + ".cross",
           "expected a list of 2 to " + std::to_string(kMaxCrossFields) + " field names");
    }
    std::set<std::string> seen;
    for (std::size_t i = 0; i < cross->size(); ++i) {
      const std::string item = path + ".cross[" + std::to_string(i) + "]";
      out.fields.push_back(field_name((*cross)[i], item));
      if (!seen.insert(out.fields.back()).second) {
        fail(item, in_quotes(out.fields.back()) + " is listed twice");
      }
    }
    parse_hashing(f, path, out);
  } else {
    check_known_fields(f, path, kNumericInputFields);
    out.kind = FeatureKind::kNumeric;
    const json& entries = f.at("numeric");
    if (!entries.is_array() || entries.empty()) {
      fail(path + ".numeric", "expected a non-empty list of {\"field\": ...} entries");
    }
    for (std::size_t i = 0; i < entries.size(); ++i) {
      out.numeric.push_back(
          parse_numeric_entry(entries[i], path + ".numeric[" + std::to_string(i) + "]"));
    }
  }
  // The input's type must be the one the kind makes.
  if (out.kind == FeatureKind::kNumeric) {
    if (type != "dense") {
      fail(input_path + ".type",
           "numeric features make a dense input, the input is '" + type + "'");
    }
    const std::size_t dim = get_size(input, input_path, "dim", std::nullopt, 1, kMaxDenseDim);
    if (dim != out.numeric.size()) {
      fail(path + ".numeric", std::to_string(out.numeric.size()) + " entries for an input of dim " +
                                  std::to_string(dim) + " (one entry per unit)");
    }
  } else if (type != "sparse_ids") {
    fail(input_path + ".type",
         "text, column and cross features make a sparse_ids input, the input is '" + type + "'");
  }
  return out;
}

// A one-input text plan (the header): a top-level "features", and one sparse_ids input without
// features of its own (the caller found none).
bool is_text_plan(const json& plan, const json& inputs) {
  if (find_field(plan, "features") == nullptr || inputs.size() != 1) return false;
  const json& input = inputs.begin().value();
  if (input.is_string()) return input.get_ref<const std::string&>() == "sparse_ids";
  const json* type = input.is_object() ? find_field(input, "type") : nullptr;
  return type != nullptr && type->is_string() &&
         type->get_ref<const std::string&>() == "sparse_ids";
}

}  // namespace

std::uint32_t InputFeatures::num_features() const {
  switch (kind) {
    case FeatureKind::kText:
      return text.num_buckets;
    case FeatureKind::kColumn:
    case FeatureKind::kCross:
      return hash_buckets;
    case FeatureKind::kNumeric:
      break;
  }
  return static_cast<std::uint32_t>(numeric.size());
}

InputFeatures text_input_features(const TextFeatureOptions& options) {
  InputFeatures out;
  out.path = "plan.features";
  out.kind = FeatureKind::kText;
  out.fields.emplace_back(kTextRecordField);
  out.text = options;
  return out;
}

std::vector<InputFeatures> parse_input_features(const json& plan) {
  if (!plan.is_object()) fail("plan", "expected a JSON object");
  std::vector<InputFeatures> out;
  const json* model = find_field(plan, "model");
  if (model == nullptr) return out;
  if (!model->is_object()) fail("plan.model", "expected an object");
  const json* inputs = find_field(*model, "inputs");
  if (inputs == nullptr) return out;
  if (!inputs->is_object()) fail("plan.model.inputs", "expected an object");
  for (const auto& [name, input] : inputs->items()) {
    if (!input.is_object()) continue;  // the "sparse_ids" shorthand: no features
    const json* f = find_field(input, "features");
    if (f != nullptr) out.push_back(parse_one(name, input, *f));
  }
  if (out.empty() && is_text_plan(plan, *inputs)) {
    const json& options = plan.at("features");
    if (!options.is_object()) fail("plan.features", "expected an object");
    out.push_back(text_input_features(parse_text_feature_options(options, "plan.features")));
  }
  return out;
}

std::vector<InputFeatures> parse_input_features(const std::string& plan_json) {
  return parse_input_features(parse_text(plan_json));
}

void validate(const InputFeatures& f) {
  const std::string& path = f.path.empty() ? f.input : f.path;
  switch (f.kind) {
    case FeatureKind::kText:
    case FeatureKind::kColumn:
      if (f.fields.size() != 1) fail(path, "a text or column feature reads exactly one field");
      break;
    case FeatureKind::kCross:
      if (f.fields.size() < 2 || f.fields.size() > kMaxCrossFields) {
        fail(path + ".cross", "expected 2 to " + std::to_string(kMaxCrossFields) + " fields");
      }
      break;
    case FeatureKind::kNumeric:
      if (f.numeric.empty()) fail(path + ".numeric", "expected at least one entry");
      for (const NumericFeature& n : f.numeric) {
        const bool finite = std::isfinite(n.mean) && std::isfinite(n.std) && std::isfinite(n.lo) &&
                            std::isfinite(n.hi) && std::isfinite(n.fallback);
        if (!finite || !(n.std > 0.0) || (n.clip && n.lo > n.hi)) {
          fail(path + ".numeric",
               in_quotes(n.field) + ": needs finite numbers, std > 0 and lo <= hi");
        }
      }
      return;
  }
  if (f.kind == FeatureKind::kText) {
    validate(f.text);
  } else if (f.hash_buckets == 0) {
    fail(path + ".hash_buckets", "must be >= 1");
  }
}

void check_buckets_fit_vocab(const InputFeatures& features, std::uint64_t vocab,
                             const std::string& table) {
  if (features.kind == FeatureKind::kNumeric || features.num_features() <= vocab) return;
  const char* field = features.kind == FeatureKind::kText ? "num_buckets" : "hash_buckets";
  fail(features.path + "." + field, std::to_string(features.num_features()) +
                                        " buckets exceed the vocab " + std::to_string(vocab) +
                                        " of table " + in_quotes(table) +
                                        " (an id would fall outside the table)");
}

}  // namespace fedleaf::core
