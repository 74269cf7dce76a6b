// The metadata of an uploaded result (train or evaluate), read from the safetensors header
// without decoding the tensors; RoundAggregator validates the tensors of train results.
//
//   ResultSummary s = summarize_result(body.data(), body.size(), "train");
//   s.num_examples;  s.metrics.at("loss");
//
// Rules (docs/design.md, the API's upload): a header of at most kMaxResultHeaderBytes, nesting
// at most kMaxJsonNesting levels; metadata "kind" equals the task's kind;
// "num_examples" is a decimal integer > 0; "loss" is present; "loss" is a decimal in
// [0, kMaxResultLoss], "accuracy" and "auc" when present decimals in [0, 1]; other keys are not
// read. Train results carry tensors; evaluate results carry none. Throws InvalidInput naming the
// key and the rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace fedleaf::server {

// The largest safetensors header a result may have. A result's header lists its update tensors
// (three entries per sparse one, ~100 bytes each) and a few metadata strings: 4 MiB holds
// thousands of tensors. Parsing JSON costs up to ~16 bytes of memory per byte of text, so
// without this bound one upload with a 64 MB header of numbers cost ~1 GB to refuse.
inline constexpr std::uint64_t kMaxResultHeaderBytes = 4 << 20;

// The largest loss a result may report: above anything float logits give, small enough that
// num_examples × loss summed over a round's reports stays finite.
inline constexpr double kMaxResultLoss = 1e100;

struct ResultSummary {
  std::string kind;  // "train" | "evaluate"
  double num_examples = 0;
  std::map<std::string, double> metrics;  // "loss", and "accuracy"/"auc" when present
  std::string task_id;                    // metadata "task_id", empty when absent
};

ResultSummary summarize_result(const std::uint8_t* data, std::size_t size,
                               const std::string& expected_kind);

}  // namespace fedleaf::server
