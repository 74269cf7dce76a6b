#include "server/repository/new_population.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/aggregation/round/next_round_plan.h"
#include "core/error.h"
#include "core/wire/safetensors.h"
#include "server/repository/population_state.h"
#include "server/repository/private_round.h"
#include "server/repository/round_clip_bounds.h"
#include "server/util/sha256.h"
#include "server/util/tokens.h"

namespace fedleaf::server {
namespace {

// The plan the population stores: the spec's, with min_contributors written out where the
// plan's default (core::kDefaultMinContributors) is more than min_reports. A round may close
// with min_reports reports, so a larger default could withhold every row of a table in every
// such round (clients_per_round 1 never learned its embedding). Written into the plan, the
// value is the one every reader sees: a restart, other servers, the status, the leaves.
std::string population_plan(const PopulationSpec& spec) {
  const auto cap = static_cast<std::uint64_t>(spec.settings.min_reports);
  if (cap >= core::kDefaultMinContributors) return spec.plan_json;
  nlohmann::json plan = nlohmann::json::parse(spec.plan_json);
  auto updates = plan.find("updates");
  if (updates == plan.end() || !updates->is_object()) return spec.plan_json;
  for (auto& [name, entry] : updates->items()) {
    if (!entry.is_object() || entry.contains("min_contributors")) continue;
    const auto aggregator = entry.find("aggregator");
    if (aggregator != entry.end() && *aggregator == "mean_over_contributors") {
      entry["min_contributors"] = std::min(cap, core::kDefaultMinContributors);
    }
  }
  return plan.dump();
}

// A row of a mean_over_contributors tensor changes only when min_contributors reports of one
// round sent it, and no round has more than clients_per_round reports (a buffered version:
// buffer_size, the field the spec gave; clients_per_round is then refused).
void check_min_contributors(const core::UpdatePlan& plan, const PopulationSettings& settings) {
  const bool buffered = !settings.buffered_json.empty();
  const char* field = buffered ? "buffer_size" : "clients_per_round";
  const char* unit = buffered ? "version" : "round";
  for (const core::TensorUpdatePlan& tensor : plan.tensors) {
    if (tensor.op.min_contributors > static_cast<std::uint64_t>(settings.clients_per_round)) {
      throw InvalidInput("population: " + tensor.path + ".min_contributors " +
                         std::to_string(tensor.op.min_contributors) + " is more than " + field +
                         " " + std::to_string(settings.clients_per_round) + ": no " + unit +
                         " could change a row of it");
    }
  }
}

}  // namespace

PopulationPlan parse_population_plan(const PopulationSpec& spec) {
  PopulationPlan out;
  out.json = population_plan(spec);
  out.parsed = core::parse_plan(plan_with_kind(out.json, "train"));
  return out;
}

PopulationInputs prepare_population(const PopulationSpec& spec, const ModelInitializer& initializer,
                                    std::uint64_t max_model_bytes) {
  const auto over_limit = [&](std::uint64_t bytes, const std::string& what) {
    return InvalidInput("population: " + what + " " + std::to_string(bytes) +
                        " bytes, more than this server's --max-model-bytes (" +
                        std::to_string(max_model_bytes) + ")");
  };
  if (spec.initial_model) {
    std::string model_bytes = widen_half_floats(*spec.initial_model);
    if (model_bytes.size() > max_model_bytes) {
      throw over_limit(model_bytes.size(), "initial_model_b64 holds (with F16 read as F32)");
    }
    return {parse_population_plan(spec), std::move(model_bytes)};
  }
  if (!initializer) {
    throw InvalidInput(
        "population: 'seed' is not supported by this server; send "
        "'initial_model_b64'");
  }
  PopulationPlan plan = parse_population_plan(spec);
  const std::uint64_t declared = core::parameter_bytes(plan.parsed.model);
  if (declared > max_model_bytes) {
    throw over_limit(declared, "the plan's model declares parameters of");
  }
  return {std::move(plan), to_string_bytes(initializer(spec.plan_json, *spec.seed))};
}

NewPopulation make_new_population(const PopulationSpec& spec, PopulationPlan plan,
                                  std::string model_bytes, double now) {
  const std::string& plan_json = plan.json;
  // Validates the model bytes and that the plan's updates fit the model.
  core::NamedTensors tensors = decode_model(model_bytes);
  auto update_plan = std::make_shared<const core::UpdatePlan>(
      private_update_plan(std::move(plan.parsed.updates), spec.settings));
  check_min_contributors(*update_plan, spec.settings);
  core::RoundAggregator aggregator(*update_plan, tensors,
                                   static_cast<std::size_t>(spec.settings.clients_per_round));

  PopulationRecord record;
  record.id = spec.id ? *spec.id : "pop-" + generate_token().substr(3, 12);
  std::string client_token = generate_token();
  record.plan_json = plan_json;
  record.client_token_hash = hash_token(client_token);
  record.settings = spec.settings;
  record.created_at = now;
  if (!record.settings.privacy_json.empty()) record.privacy_secret = draw_privacy_secret();
  RoundRecord round0;
  round0.population_id = record.id;
  round0.started_at = now;
  round0.deadline = now + record.settings.round_deadline_s;
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
