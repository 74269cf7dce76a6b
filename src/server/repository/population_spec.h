// PopulationSpec: a population to create, as the repository takes it — its id, plan, round-0
// model or seed, and settings, already checked. POST /v1/populations reads it from its body
// (api/population_body.h); tests and tools build it directly.
//
//   PopulationSpec spec;
//   spec.plan_json = plan;  spec.seed = 7;  spec.settings.rounds = 10;
//   repository.create_population(spec);
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/store/population_settings.h"

namespace fedleaf::server {

struct PopulationSpec {
  std::optional<std::string> id;             // absent: generated ("pop-…")
  std::string plan_json;                     // the plan, re-serialised compactly
  std::optional<std::string> initial_model;  // safetensors bytes
  std::optional<std::uint64_t> seed;
  PopulationSettings settings;
};

}  // namespace fedleaf::server
