// NewPopulation: a population about to be created — its records, round 0, the model it publishes
// and its tokens — built from a parsed spec and checked the way every leaf and every round will
// use it, before anything is stored.
//
//   PopulationPlan plan = parse_population_plan(spec);   // once, before the model is made
//   NewPopulation made = make_new_population(spec, std::move(plan), model_bytes, clock.now());
//   store.create_population(made.record, made.round0, {made.record.id, 0, etag, bytes});
#pragma once

#include <memory>
#include <string>

#include "core/aggregation/round/round_aggregator.h"
#include "core/aggregation/updates/update_plan.h"
#include "core/train/plan.h"
#include "server/repository/population_spec.h"
#include "server/repository/task_repository_options.h"
#include "server/store/store.h"

namespace fedleaf::server {

struct NewPopulation {
  std::string client_token;  // shown once to the creator; the record keeps its hash
  PopulationRecord record;
  RoundRecord round0;
  std::string model_bytes;  // F32 safetensors (F16/BF16 arrays widened)
  std::string model_etag;   // sha256 of model_bytes
  std::shared_ptr<const core::UpdatePlan> update_plan;
  core::RoundAggregator aggregator;  // round 0's, empty
};

// The plan a population stores, and that plan parsed as every leaf parses it.
struct PopulationPlan {
  std::string json;
  core::Plan parsed;  // as a train task carries it
};

// The whole plan checked once (InvalidInput for a plan no leaf can run): parsed as a train task,
// which requires everything an evaluate task does and more. A mean_over_contributors tensor
// without min_contributors gets min(2, min_reports) written into the stored plan (the plan's
// default 2 could never be met by a round closing with one report).
PopulationPlan parse_population_plan(const PopulationSpec& spec);

// A spec's plan, parsed once, and its round-0 model: the initial model (F16/BF16 arrays widened
// to F32), or the model `initializer` makes from the seed. Checked in this order: the initial
// model's format, then the plan; or the plan, then the bytes its model declares, then the
// model is made. InvalidInput for a model over max_model_bytes (before a seed's is allocated),
// and for a seed when `initializer` is empty.
struct PopulationInputs {
  PopulationPlan plan;
  std::string model_bytes;
};
PopulationInputs prepare_population(const PopulationSpec& spec, const ModelInitializer& initializer,
                                    std::uint64_t max_model_bytes);

// Checks the model (InvalidInput for bytes that are not safetensors or hold non-finite values)
// and that the plan's updates fit the model; `plan` is parse_population_plan(spec). The id is
// spec.id or a generated "pop-…". An explicit min_contributors above clients_per_round (a
// buffered population's buffer_size) is InvalidInput naming both.
NewPopulation make_new_population(const PopulationSpec& spec, PopulationPlan plan,
                                  std::string model_bytes, double now);

}  // namespace fedleaf::server
