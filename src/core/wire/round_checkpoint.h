// A half-finished round as stored bytes ("fedleaf.round_aggregator.v2"): what a server writes
// every few uploads and restores a round from after a restart (RoundAggregator::checkpoint and
// restore). One writer and one reader of the round's fields; each accumulator's arrays and
// entries (`<tensor>@keys`, `<tensor>@sums`, ...) are the accumulator's own
// (accumulator/accumulator_checkpoint.cc), carried here as they are.
//
//   std::vector<std::uint8_t> bytes = write_round_checkpoint(checkpoint);
//   RoundCheckpoint again = read_round_checkpoint(bytes.data(), bytes.size());
//
// Safetensors (safetensors.h), finite, whose __metadata__ holds, as strings:
//   "format"        "fedleaf.round_aggregator.v2" (or the older v1, read only: its accumulators
//                   kept no per-key report counts)
//   "num_reports"   decimal, in [0, 2^53] (and what this platform's size_t counts)
//   "total_weight"  the sum of the reports' weights, exact (format_double_exact), finite, >= 0
//   "num_capped"    decimal; absent (written before the weight cap) means 0
//   "claims"        every report's claimed num_examples, decimal in [1, 2^53], joined by ','
//                   ("" for none); absent (written before claims were kept) means unknown
// and the accumulators' entries. The bytes of a given round never change: a checkpoint written
// by an older server is read by a newer one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor/tensor.h"

namespace fedleaf::core {

inline constexpr const char* kRoundCheckpointFormat = "fedleaf.round_aggregator.v2";
inline constexpr const char* kRoundCheckpointFormatV1 = "fedleaf.round_aggregator.v1";

struct RoundCheckpoint {
  bool v1 = false;  // read from a v1 checkpoint; the writer writes v2 only
  std::uint64_t num_reports = 0;
  double total_weight = 0.0;
  std::uint64_t num_capped = 0;
  std::optional<std::vector<std::uint64_t>> claims;  // nullopt: unknown
  NamedTensors arrays;                               // the accumulators' arrays
  Metadata metadata;  // the accumulators' entries (the reader returns every entry)
};

std::vector<std::uint8_t> write_round_checkpoint(const RoundCheckpoint& checkpoint);

// Reads bytes from disk: InvalidInput "round checkpoint: ..." naming the field and the rule for
// anything but the format above. How the fields agree with each other and with the accumulators'
// arrays and entries (num_capped and the claims against num_reports) is the round's to check,
// after its accumulators (RoundAggregator::restore).
RoundCheckpoint read_round_checkpoint(const std::uint8_t* data, std::size_t size);

// The robust clip bound each accumulator of a checkpoint was saved with (its "<tensor>@clip"
// entry, "norm:<bound>" or "rms:<bound>"; tensors whose clip is off have none), from the header
// alone. InvalidInput for bytes that are not safetensors or an entry of another form.
std::vector<std::pair<std::string, double>> read_round_checkpoint_clip_bounds(
    const std::uint8_t* data, std::size_t size);

}  // namespace fedleaf::core
