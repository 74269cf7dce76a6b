// RoundAggregator::checkpoint, restore and checkpoint_clip_bounds: a half-finished round to and
// from its stored bytes (core/wire/round_checkpoint.h, the format's one writer and reader; each
// accumulator's arrays are its own, accumulator_checkpoint.cc).
#include <algorithm>

#include "core/aggregation/accumulator/sparse_sum_accumulator.h"
#include "core/aggregation/operators/operator_table.h"
#include "core/aggregation/round/round_aggregator.h"
#include "core/aggregation/round/round_state.h"
#include "core/error.h"
#include "core/text/text_format.h"
#include "core/wire/round_checkpoint.h"

namespace fedleaf::core {

std::vector<std::uint8_t> RoundAggregator::checkpoint() const {
  refuse_if_private("checkpoint");
  RoundCheckpoint out;
  out.num_reports = state_->num_reports;
  out.total_weight = state_->total_weight;
  out.num_capped = state_->num_capped;
  if (state_->claims_known) out.claims = state_->claims;
  for (const SparseSumAccumulator& acc : state_->accumulators) {
    acc.save(acc.name(), out.arrays, out.metadata);
  }
  return write_round_checkpoint(out);
}

RoundAggregator RoundAggregator::restore(const UpdatePlan& plan, NamedTensors model,
                                         const std::uint8_t* data, std::size_t size) {
  RoundAggregator round(plan, std::move(model));
  round.refuse_if_private("restore");
  const RoundCheckpoint file = read_round_checkpoint(data, size);
  const std::string where = "round checkpoint";
  std::vector<SparseSumAccumulator>& accumulators = round.state_->accumulators;
  for (const auto& [name, tensor] : file.arrays) {
    const bool known = std::any_of(
        accumulators.begin(), accumulators.end(), [&n = name](const SparseSumAccumulator& a) {
          return n == a.name() + "@keys" || n == a.name() + "@sums" ||
                 n == a.name() + "@contributors" || n == a.name() + "@reports";
        });
    if (!known) {
      throw InvalidInput(where + ": tensor " + in_quotes(name) +
                         " belongs to no accumulator of the plan");
    }
  }
  for (SparseSumAccumulator& planned : accumulators) {
    SparseSumAccumulator loaded =
        SparseSumAccumulator::load(planned.name(), file.arrays, file.metadata);
    const std::string what = where + ": accumulator " + in_quotes(planned.name());
    OperatorSpec expected = planned.spec();
    // A v1 checkpoint kept no report counts: its round finishes under the rules it started
    // with, without the threshold, and the next round applies the plan's min_contributors.
    if (file.v1) expected.min_contributors = 0;
    // A round checkpointed before row clipping finishes without it (as it started).
    if (loaded.spec().row_clip == 0.0) expected.row_clip = 0.0;
    if (loaded.spec() != expected || loaded.encoding() != planned.encoding() ||
        loaded.dtype() != planned.dtype() || loaded.dense_shape() != planned.dense_shape()) {
      throw InvalidInput(what + " was saved for " + std::string(operator_name(loaded.spec().op)) +
                         " of a " + std::string(update_encoding_name(loaded.encoding())) + " " +
                         std::string(dtype_name(loaded.dtype())) + " tensor of dense_shape " +
                         shape_to_string(loaded.dense_shape()) + ", which the plan does not say");
    }
    if (loaded.num_updates() != file.num_reports || loaded.total_weight() != file.total_weight) {
      throw InvalidInput(what + " holds " + std::to_string(loaded.num_updates()) +
                         " updates of total weight " + format_double_exact(loaded.total_weight()) +
                         ", but the round has " + std::to_string(file.num_reports) + " of " +
                         format_double_exact(file.total_weight));
    }
    planned = std::move(loaded);
  }
  if (file.num_capped > file.num_reports) {
    throw InvalidInput(where + ": num_capped " + std::to_string(file.num_capped) +
                       " exceeds num_reports " + std::to_string(file.num_reports));
  }
  if (file.claims && file.claims->size() != file.num_reports) {
    throw InvalidInput(where + ": claims lists " + std::to_string(file.claims->size()) +
                       " reports' num_examples, but the round has " +
                       std::to_string(file.num_reports));
  }
  round.state_->num_capped = file.num_capped;
  round.state_->claims_known = file.claims.has_value();
  if (file.claims) round.state_->claims = *file.claims;
  round.state_->num_reports = static_cast<std::size_t>(file.num_reports);
  round.state_->total_weight = file.total_weight;
  return round;
}

ClipBounds RoundAggregator::checkpoint_clip_bounds(const std::uint8_t* data, std::size_t size) {
  return read_round_checkpoint_clip_bounds(data, size);
}

}  // namespace fedleaf::core
