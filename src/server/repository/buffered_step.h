// The unnormalized step of a buffered population (core/aggregation/round/buffered_spec.h,
// "staleness_normalization": "unnormalized", FedBuff's Algorithm 1): the version's aggregates
// are the weighted means Σ nᵢ·w(sᵢ)·Δᵢ / Σ nᵢ·w(sᵢ) the aggregator computes; scaled by
// ρ = Σ nᵢ·w(sᵢ) / Σ nᵢ they are Σ nᵢ·w(sᵢ)·Δᵢ / Σ nᵢ — with equal nᵢ the paper's
// Σ w(sᵢ)·Δᵢ / K — so a buffer of stale reports moves the model less than a fresh one.
//
//   std::vector<core::TensorAggregate> step = aggregator.aggregates();
//   scale_aggregates(step, plan, staleness_scale(aggregator.total_weight(), round.examples));
//
// nᵢ is what the fold weighed report i with (num_examples capped: the round's `examples`).
// ρ scales the aggregate of every operator whose values are weighted by the report's weight (the
// means), alike: a per-row operator (mean_over_contributors) keeps its per-row mean, shrunk by the
// buffer's ρ; `sum` and `count` never see a staleness weight and are left as they are.
#pragma once

#include <vector>

#include "core/aggregation/round/round_aggregator.h"
#include "core/aggregation/updates/update_plan.h"

namespace fedleaf::server {

// ρ = folded_weight / folded_examples (RoundAggregator::total_weight(), the round's examples):
// in (0, 1]; 1 for a buffer without examples.
double staleness_scale(double folded_weight, double folded_examples);

// Multiplies each aggregate's values by `factor` (each element rounded once to its dtype) where
// the plan's operator of that tensor weighs values by the report's weight; withheld aggregates
// (zeros) and the others are left as they are.
void scale_aggregates(std::vector<core::TensorAggregate>& aggregates, const core::UpdatePlan& plan,
                      double factor);

}  // namespace fedleaf::server
