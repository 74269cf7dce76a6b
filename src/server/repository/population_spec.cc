#include "server/repository/population_spec.h"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_duplicate_keys.h"
#include "core/json_nesting.h"
#include "server/util/base64.h"

namespace fedleaf::server {
namespace {

using nlohmann::json;

int integer_field(const json& body, const char* name, int fallback, int min, int max) {
  if (!body.contains(name)) return fallback;
  const json& v = body.at(name);
  if (!v.is_number_integer()) {
    throw InvalidInput(std::string("population: '") + name + "' must be an integer");
  }
  const auto n = v.get<std::int64_t>();
  if (n < min || n > max) {
    throw InvalidInput(std::string("population: '") + name + "' must be in [" +
                       std::to_string(min) + ", " + std::to_string(max) + "], got " +
                       std::to_string(n));
  }
  return static_cast<int>(n);
}

double positive_field(const json& body, const char* name, double fallback, double min) {
  if (!body.contains(name)) return fallback;
  const json& v = body.at(name);
  if (!v.is_number()) {
    throw InvalidInput(std::string("population: '") + name + "' must be a number");
  }
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < min || (min == 0 && x <= 0)) {
    throw InvalidInput(std::string("population: '") + name + "' must be a finite number " +
                       (min == 0 ? "> 0" : ">= " + std::to_string(min)));
  }
  return x;
}

}  // namespace

bool is_valid_population_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

PopulationSpec parse_population_spec(const std::string& body_text) {
  core::check_json_nesting(body_text, core::kMaxJsonNesting, "population");
  core::DuplicateKeys duplicates;
  json body = json::parse(body_text, duplicates.callback(), false);
  if (body.is_discarded() || !body.is_object()) {
    throw InvalidInput("population: body must be a JSON object");
  }
  // The plan is stored as the server read it, so a leaf never sees the value it skipped.
  if (duplicates.found()) {
    throw InvalidInput("population: the key " + duplicates.describe() + " appears twice");
  }
  PopulationSpec spec;
  if (body.contains("id")) {
    if (!body["id"].is_string() || !is_valid_population_id(body["id"].get<std::string>())) {
      throw InvalidInput("population: 'id' must be 1-64 characters of [A-Za-z0-9_-]");
    }
    spec.id = body["id"].get<std::string>();
  }
  if (!body.contains("plan") || !body["plan"].is_object()) {
    throw InvalidInput("population: 'plan' must be a JSON object");
  }
  spec.plan_json = body["plan"].dump();

  const bool has_model = body.contains("initial_model_b64");
  const bool has_seed = body.contains("seed");
  if (has_model == has_seed) {
    throw InvalidInput("population: give exactly one of 'initial_model_b64' and 'seed'");
  }
  if (has_model) {
    if (!body["initial_model_b64"].is_string()) {
      throw InvalidInput("population: 'initial_model_b64' must be a base64 string");
    }
    spec.initial_model =
        base64_decode(body["initial_model_b64"].get<std::string>(), "initial_model_b64");
  } else {
    if (!body["seed"].is_number_unsigned()) {
      throw InvalidInput("population: 'seed' must be a non-negative integer");
    }
    spec.seed = body["seed"].get<std::uint64_t>();
  }

  constexpr int kMax = std::numeric_limits<int>::max();
  spec.rounds = integer_field(body, "rounds", 1, 1, 1'000'000);
  spec.clients_per_round = integer_field(body, "clients_per_round", 1, 1, 1'000'000);
  spec.min_reports =
      integer_field(body, "min_reports", spec.clients_per_round, 1, spec.clients_per_round);
  spec.round_deadline_s = positive_field(body, "round_deadline_s", 600, 0);
  spec.lease_s = positive_field(body, "lease_s", 120, 0);
  const double over_selection = positive_field(body, "over_selection", 1.0, 1.0);
  const double tasks = std::ceil(spec.clients_per_round * over_selection);
  if (tasks > 10'000'000) {
    throw InvalidInput("population: clients_per_round * over_selection must be <= 10000000");
  }
  spec.train_tasks_per_round = static_cast<int>(tasks);
  spec.eval_tasks_per_round = integer_field(body, "eval_tasks_per_round", 0, 0, kMax);
  return spec;
}

}  // namespace fedleaf::server
