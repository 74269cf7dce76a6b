#include "server/repository/new_population.h"

#include "core/aggregation/next_round_plan.h"
#include "core/train/plan.h"
#include "core/wire/safetensors.h"
#include "server/repository/population_state.h"
#include "server/repository/round_clip_bounds.h"
#include "server/util/sha256.h"
#include "server/util/tokens.h"

namespace fedleaf::server {

NewPopulation make_new_population(const PopulationSpec& spec, std::string model_bytes, double now) {
  // The whole plan, as every leaf will parse it (both kinds of task carry it).
  core::parse_plan(plan_with_kind(spec.plan_json, "train"));
  core::parse_plan(plan_with_kind(spec.plan_json, "evaluate"));
  // Validates the model bytes and that the plan's updates fit the model.
  core::NamedTensors tensors = decode_model(model_bytes);
  auto update_plan =
      std::make_shared<const core::UpdatePlan>(core::parse_update_plan(spec.plan_json));
  core::RoundAggregator aggregator(*update_plan, tensors,
                                   static_cast<std::size_t>(spec.clients_per_round));

  PopulationRecord record;
  record.id = spec.id ? *spec.id : "pop-" + generate_token().substr(3, 12);
  std::string client_token = generate_token();
  record.plan_json = spec.plan_json;
  record.client_token_hash = hash_token(client_token);
  record.rounds = spec.rounds;
  record.clients_per_round = spec.clients_per_round;
  record.min_reports = spec.min_reports;
  record.round_deadline_s = spec.round_deadline_s;
  record.lease_s = spec.lease_s;
  record.train_tasks_per_round = spec.train_tasks_per_round;
  record.eval_tasks_per_round = spec.eval_tasks_per_round;
  record.created_at = now;
  RoundRecord round0;
  round0.population_id = record.id;
  round0.started_at = now;
  round0.deadline = now + record.round_deadline_s;
  round0.robust_json = open_round_robust_json(
      core::initial_clip_bounds(*update_plan),
      update_plan->adaptive_example_cap
          ? std::optional<std::uint64_t>(update_plan->max_examples_per_report)
          : std::nullopt);
  std::string etag = sha256_hex(model_bytes);
  return {std::move(client_token), std::move(record), std::move(round0),
          std::move(model_bytes),  std::move(etag),   std::move(update_plan),
          std::move(aggregator)};
}

}  // namespace fedleaf::server
