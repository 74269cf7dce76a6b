// RoundAggregator's state, shared by the files that define its members (round_aggregator.cc,
// round_next_model.cc, round_aggregator_checkpoint.cc); included by nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/aggregation/accumulator/sparse_sum_accumulator.h"
#include "core/aggregation/round/round_aggregator.h"
#include "core/privacy/private_sum.h"
#include "core/tensor/tensor.h"

namespace fedleaf::core {

class RoundAggregator::State {
 public:
  NamedTensors model;
  std::vector<SparseSumAccumulator> accumulators;  // one per tensor in "updates", by name
  std::size_t num_reports = 0;
  double total_weight = 0.0;
  std::uint64_t max_examples_per_report = 0;  // 0: no cap
  std::uint64_t num_capped = 0;
  // Every report's num_examples as claimed (uncapped), in fold order: the adaptive cap's median.
  // claims_known is false for a round restored from a checkpoint written before claims were kept.
  std::vector<std::uint64_t> claims;
  bool claims_known = true;
  // A private round (UpdatePlan::privacy): every report goes here, the accumulators stay empty.
  std::optional<PrivateSum> private_sum;
};

}  // namespace fedleaf::core
