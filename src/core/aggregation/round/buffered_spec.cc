#include "core/aggregation/round/buffered_spec.h"

#include <cmath>

#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"

namespace fedleaf::core {
namespace {

using nlohmann::json;

constexpr std::uint64_t kMaxBufferSize = 1'000'000;
constexpr std::uint64_t kMaxConcurrency = 10'000'000;
constexpr std::uint64_t kMaxStaleness = 1'000'000;
constexpr double kMaxExponent = 100;  // 1/(1+s)^100 is already 0 for every stale report

void parse_weight(const json& object, const std::string& path, BufferedSpec& spec) {
  if (!object.is_object()) plan_json::fail(path, "expected an object with a \"weight\"");
  if (!object.contains("weight"))
    plan_json::fail(path + ".weight", "missing (polynomial or constant)");
  spec.weight = plan_json::get_choice<StalenessWeightType>(
      object, path, "weight", nullptr, "staleness weight",
      {{"polynomial", StalenessWeightType::kPolynomial},
       {"constant", StalenessWeightType::kConstant}});
  if (spec.weight == StalenessWeightType::kConstant) {
    check_known_fields(object, path, {"weight"});
    return;
  }
  check_known_fields(object, path, {"weight", "exponent"});
  const json* v = plan_json::find_field(object, "exponent");
  if (v == nullptr) return;
  const char* rule = "expected a number in (0, 100]";
  if (!v->is_number()) plan_json::fail(path + ".exponent", rule);
  const double x = v->get<double>();
  if (!std::isfinite(x) || x <= 0 || x > kMaxExponent) {
    plan_json::fail(path + ".exponent", std::string(rule) + ", got " + v->dump());
  }
  spec.exponent = x;
}

}  // namespace

bool BufferedSpec::operator==(const BufferedSpec& other) const {
  return buffer_size == other.buffer_size && concurrency == other.concurrency &&
         max_staleness == other.max_staleness && weight == other.weight &&
         normalization == other.normalization &&
         (weight == StalenessWeightType::kConstant || exponent == other.exponent);
}

BufferedSpec parse_buffered_spec(const json& body, const std::string& path) {
  if (!body.is_object()) plan_json::fail(path, "expected an object");
  BufferedSpec spec;
  spec.buffer_size =
      plan_json::get_integer(body, path, "buffer_size", std::nullopt, 1, kMaxBufferSize);
  spec.concurrency =
      plan_json::get_integer(body, path, "concurrency", spec.buffer_size, 1, kMaxConcurrency);
  spec.max_staleness =
      plan_json::get_integer(body, path, "max_staleness", spec.max_staleness, 0, kMaxStaleness);
  if (const json* w = plan_json::find_field(body, "staleness_weight")) {
    parse_weight(*w, path + ".staleness_weight", spec);
  }
  spec.normalization = plan_json::get_choice<StalenessNormalization>(
      body, path, "staleness_normalization", "normalized", "staleness normalization",
      {{"normalized", StalenessNormalization::kNormalized},
       {"unnormalized", StalenessNormalization::kUnnormalized}});
  return spec;
}

std::string buffered_spec_json(const BufferedSpec& spec) {
  json weight = {
      {"weight", spec.weight == StalenessWeightType::kConstant ? "constant" : "polynomial"}};
  if (spec.weight == StalenessWeightType::kPolynomial) weight["exponent"] = spec.exponent;
  json out = {{"buffer_size", spec.buffer_size},
              {"concurrency", spec.concurrency},
              {"max_staleness", spec.max_staleness},
              {"staleness_weight", weight}};
  // Only when not the default: what every population stored before the field reads as.
  if (spec.normalization == StalenessNormalization::kUnnormalized) {
    out["staleness_normalization"] = "unnormalized";
  }
  return out.dump();
}

std::optional<BufferedSpec> buffered_spec_from_text(const std::string& text,
                                                    const std::string& path) {
  if (text.empty()) return std::nullopt;
  const json object = json::parse(text, nullptr, false);
  if (object.is_discarded()) plan_json::fail(path, "not valid JSON");
  check_known_fields(object, path,
                     {"buffer_size", "concurrency", "max_staleness", "staleness_weight",
                      "staleness_normalization"});
  return parse_buffered_spec(object, path);
}

double staleness_weight(const BufferedSpec& spec, std::uint64_t staleness) {
  if (spec.weight == StalenessWeightType::kConstant) return 1.0;
  return 1.0 / std::pow(1.0 + static_cast<double>(staleness), spec.exponent);
}

}  // namespace fedleaf::core
