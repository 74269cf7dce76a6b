#include "server/repository/result_summary.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_duplicate_keys.h"
#include "core/json_nesting.h"
#include "core/safetensors.h"
#include "core/text_format.h"

namespace fedleaf::server {
namespace {

// The metrics a result reports and their ranges: losses are cross entropies (>= 0; from float
// logits they stay below 1e39), accuracy and AUC are fractions. A round sums num_examples ×
// metric over its reports, so the bound also keeps those sums finite: one upload of loss 1e308
// made the round's mean loss non-finite for good.
struct MetricRange {
  const char* key;
  double max;
};
constexpr MetricRange kMetrics[] = {{"loss", kMaxResultLoss}, {"accuracy", 1}, {"auc", 1}};

double parse_metric(const std::string& text, const MetricRange& metric) {
  const std::string key = metric.key;
  if (text.empty()) throw InvalidInput("result metadata '" + key + "': empty, expected a number");
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) {
    throw InvalidInput("result metadata '" + key + "': " + core::in_quotes(text) +
                       " is not a finite number");
  }
  if (!(v >= 0 && v <= metric.max)) {
    throw InvalidInput("result metadata '" + key + "': " + core::in_quotes(text) +
                       " is outside [0, " + core::format_decimal(metric.max) + "]");
  }
  return v;
}

}  // namespace

ResultSummary summarize_result(const std::uint8_t* data, std::size_t size,
                               const std::string& expected_kind) {
  if (size < 8) throw InvalidInput("result: truncated safetensors (fewer than 8 bytes)");
  std::uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | data[i];
  if (header_size > size - 8 || header_size > core::kMaxSafetensorsHeaderBytes) {
    throw InvalidInput("result: safetensors header length " + std::to_string(header_size) +
                       " exceeds the " + std::to_string(size - 8) + " bytes that follow");
  }
  if (header_size > kMaxResultHeaderBytes) {
    throw InvalidInput("result: safetensors header of " + std::to_string(header_size) +
                       " bytes exceeds the " + std::to_string(kMaxResultHeaderBytes) +
                       " bytes a result header may have");
  }
  const auto* begin = reinterpret_cast<const char*>(data + 8);
  core::check_json_nesting({begin, static_cast<std::size_t>(header_size)}, core::kMaxJsonNesting,
                           "result: safetensors header");
  core::DuplicateKeys duplicates;
  nlohmann::json header = nlohmann::json::parse(begin, begin + header_size, duplicates.callback(),
                                                /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    throw InvalidInput("result: safetensors header is not a JSON object");
  }
  if (duplicates.found()) {
    throw InvalidInput("result: the safetensors header names " + duplicates.describe() + " twice");
  }
  const auto meta_it = header.find("__metadata__");
  if (meta_it == header.end() || !meta_it->is_object()) {
    throw InvalidInput("result: safetensors header has no __metadata__ object");
  }
  const nlohmann::json& meta = *meta_it;
  auto string_of = [&](const char* key) -> std::optional<std::string> {
    auto it = meta.find(key);
    if (it == meta.end()) return std::nullopt;
    if (!it->is_string()) {
      throw InvalidInput(std::string("result metadata '") + key + "': must be a string");
    }
    return it->get<std::string>();
  };

  ResultSummary summary;
  summary.kind = string_of("kind").value_or("train");
  if (summary.kind != expected_kind) {
    throw InvalidInput("result metadata 'kind': " + core::in_quotes(summary.kind) +
                       " does not match the " + expected_kind + " task");
  }
  const auto examples = string_of("num_examples");
  if (!examples) throw InvalidInput("result metadata 'num_examples': missing");
  char* end = nullptr;
  const long long n = std::strtoll(examples->c_str(), &end, 10);
  if (examples->empty() || end != examples->c_str() + examples->size() || n <= 0) {
    throw InvalidInput("result metadata 'num_examples': " + core::in_quotes(*examples) +
                       " is not an integer > 0");
  }
  summary.num_examples = static_cast<double>(n);
  if (!meta.contains("loss")) throw InvalidInput("result metadata 'loss': missing");
  for (const MetricRange& metric : kMetrics) {
    if (auto text = string_of(metric.key))
      summary.metrics[metric.key] = parse_metric(*text, metric);
  }
  summary.task_id = string_of("task_id").value_or("");

  std::size_t tensors = 0;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() != "__metadata__") ++tensors;
  }
  if (expected_kind == "evaluate" && tensors != 0) {
    throw InvalidInput("result: an evaluate result carries no tensors, got " +
                       std::to_string(tensors));
  }
  return summary;
}

}  // namespace fedleaf::server
