#include "core/wire/result_format.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "core/text/text_format.h"
#include "core/wire/safetensors_index.h"

namespace fedleaf::core {
namespace {

constexpr std::uint64_t kMaxExactExamples = std::uint64_t{1} << 53;

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
    throw InvalidInput("result metadata '" + key + "': " + in_quotes(text) +
                       " is not a finite number");
  }
  if (!(v >= 0 && v <= metric.max)) {
    throw InvalidInput("result metadata '" + key + "': " + in_quotes(text) + " is outside [0, " +
                       format_decimal(metric.max) + "]");
  }
  return v;
}

// Decimal digits only (no sign, space or exponent), at most 2^53 so the weight is exact.
std::uint64_t parse_num_examples(const std::string& text) {
  const bool digits =
      !text.empty() && text.size() <= 16 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const std::uint64_t value = digits ? std::stoull(text) : 0;
  if (!digits || value == 0 || value > kMaxExactExamples) {
    throw InvalidInput("result metadata 'num_examples': " + in_quotes(text) +
                       " is not an integer in [1, 2^53]");
  }
  return value;
}

}  // namespace

std::string_view result_kind_name(ResultKind kind) {
  return kind == ResultKind::kTrain ? "train" : "evaluate";
}

Metadata result_metadata(const ResultReport& report) {
  Metadata metadata{{"kind", std::string(result_kind_name(report.kind))},
                    {"num_examples", std::to_string(report.num_examples)},
                    {"loss", format_decimal(report.loss)},
                    {"accuracy", format_decimal(report.accuracy)}};
  if (report.auc) metadata["auc"] = format_decimal(*report.auc);
  if (!report.task_id.empty()) metadata["task_id"] = report.task_id;
  return metadata;
}

SafetensorsIndex index_result(const std::uint8_t* data, std::size_t size) {
  // The cap is checked on the length field alone, before a byte of the header is parsed; bytes
  // too short to hold the header they announce are the index's to refuse.
  if (size >= 8) {
    std::uint64_t header_size = 0;
    for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | data[i];
    if (header_size <= size - 8 && header_size > kMaxResultHeaderBytes) {
      throw InvalidInput("result: safetensors header of " + std::to_string(header_size) +
                         " bytes exceeds the " + std::to_string(kMaxResultHeaderBytes) +
                         " bytes a result header may have");
    }
  }
  return index_safetensors(data, size);
}

ResultHeader read_result_header(const SafetensorsIndex& index, ResultKind expected) {
  const Metadata& meta = index.metadata;
  const auto string_of = [&](const char* key) -> std::optional<std::string> {
    const auto it = meta.find(key);
    if (it == meta.end()) return std::nullopt;
    return it->second;
  };

  ResultHeader out;
  const std::string kind = string_of("kind").value_or("train");
  if (kind != result_kind_name(expected)) {
    throw InvalidInput("result metadata 'kind': " + in_quotes(kind) + " does not match the " +
                       std::string(result_kind_name(expected)) + " task");
  }
  out.kind = expected;
  const auto examples = string_of("num_examples");
  if (!examples) throw InvalidInput("result metadata 'num_examples': missing");
  out.num_examples = parse_num_examples(*examples);
  if (meta.count("loss") == 0) throw InvalidInput("result metadata 'loss': missing");
  for (const MetricRange& metric : kMetrics) {
    if (auto text = string_of(metric.key)) out.metrics[metric.key] = parse_metric(*text, metric);
  }
  out.task_id = string_of("task_id").value_or("");

  if (expected == ResultKind::kEvaluate) {
    const std::size_t tensors = index.arrays.size();  // stored arrays (a sparse tuple: three)
    if (tensors != 0) {
      throw InvalidInput("result: an evaluate result carries no tensors, got " +
                         std::to_string(tensors));
    }
  }
  return out;
}

}  // namespace fedleaf::core
