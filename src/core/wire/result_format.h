// The train and evaluate result format: what a leaf uploads and the task repository reads. One
// writer (result_metadata, used by the leaf's TrainingSession and execute()) and one reader of
// the header (read_result_header, used by the server's upload path and by RoundAggregator), so
// each field has exactly one rule.
//
//   Metadata m = result_metadata({ResultKind::kTrain, /*num_examples=*/70, loss, accuracy});
//   ResultHeader h = read_result_header(upload.data(), upload.size(), ResultKind::kTrain);
//   h.num_examples;  h.metrics.at("loss");
//
// A result is safetensors (core/wire/safetensors.h) whose __metadata__ holds, as strings:
//   "kind"          "train" | "evaluate"; absent means "train"; must be the task's kind
//   "num_examples"  decimal digits, an integer in [1, 2^53] (exact as a double weight)
//   "loss"          required, a decimal in [0, kMaxResultLoss]
//   "accuracy"      optional, a decimal in [0, 1]
//   "auc"           optional, a decimal in [0, 1] (evaluate results of binary tasks)
//   "task_id"       optional, any string (the uploaded task's id when a leaf sets it)
// Other keys (a sparse tuple's "<tensor>:encoding") are not read here. A train result carries
// the update's tensors (RoundAggregator validates them); an evaluate result carries none.
// Numbers are written with format_decimal (9 significant digits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/tensor/tensor.h"

namespace fedleaf::core {

enum class ResultKind { kTrain, kEvaluate };

// The largest safetensors header a result may have. A result's header lists its update tensors
// (three entries per sparse one, ~100 bytes each) and a few metadata strings: 4 MiB holds
// thousands of tensors. Parsing JSON costs up to ~16 bytes of memory per byte of text, so
// without this bound one upload with a 64 MB header of numbers cost ~1 GB to refuse.
inline constexpr std::uint64_t kMaxResultHeaderBytes = 4 << 20;

// The largest loss a result may report: above anything float logits give, small enough that
// num_examples × loss summed over a round's reports stays finite.
inline constexpr double kMaxResultLoss = 1e100;

// What a leaf reports beside its update.
struct ResultReport {
  ResultKind kind = ResultKind::kTrain;
  std::uint64_t num_examples = 0;
  double loss = 0.0;
  double accuracy = 0.0;
  std::optional<double> auc;  // written only when set
  std::string task_id;        // written only when not empty
};

// The metadata of a result (the tensors' encodings are added by whoever writes the tensors).
Metadata result_metadata(const ResultReport& report);

struct ResultHeader {
  ResultKind kind = ResultKind::kTrain;
  std::uint64_t num_examples = 0;
  std::map<std::string, double> metrics;  // "loss", and "accuracy"/"auc" when present
  std::string task_id;                    // empty when absent
};

// Reads the header of result bytes without decoding the tensors: a header of at most
// kMaxResultHeaderBytes, nested at most kMaxJsonNesting levels, no key given twice, then each
// field by its rule above. Throws InvalidInput naming the field and the rule ("result metadata
// 'num_examples': '0' is not an integer in [1, 2^53]").
ResultHeader read_result_header(const std::uint8_t* data, std::size_t size, ResultKind expected);

std::string_view result_kind_name(ResultKind kind);

}  // namespace fedleaf::core
