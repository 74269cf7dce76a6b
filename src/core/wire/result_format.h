// The train and evaluate result format: what a leaf uploads and the task repository reads. One
// writer (result_metadata, used by the leaf's TrainingSession and execute()) and one reader of
// the header (read_result_header, used by the server's upload path and by RoundAggregator), so
// each field has exactly one rule. The header is parsed once, by the safetensors index
// (safetensors_index.h): the reader reads the index's metadata, and the fold reads the tensors
// through the same index.
//
//   Metadata m = result_metadata({ResultKind::kTrain, /*num_examples=*/70, loss, accuracy});
//   SafetensorsIndex index = index_result(upload.data(), upload.size());
//   ResultHeader h = read_result_header(index, ResultKind::kTrain);
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
#include "core/wire/safetensors_index.h"

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

// The index of result bytes (index_safetensors: a header nested at most kMaxJsonNesting levels,
// no key given twice, every __metadata__ value a string, the arrays tiling the data), refusing a
// header longer than kMaxResultHeaderBytes before any of it is parsed. Throws InvalidInput.
SafetensorsIndex index_result(const std::uint8_t* data, std::size_t size);

// Reads a result's fields from its index (index_result) by their rules above, without decoding
// the tensors. Throws InvalidInput naming the field and the rule ("result metadata
// 'num_examples': '0' is not an integer in [1, 2^53]").
ResultHeader read_result_header(const SafetensorsIndex& index, ResultKind expected);

std::string_view result_kind_name(ResultKind kind);

}  // namespace fedleaf::core
