#include "server/api/population_body.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/aggregation/round/buffered_spec.h"
#include "core/aggregation/server_optimizer/server_optimizer.h"
#include "core/error.h"
#include "core/json/json_duplicate_keys.h"
#include "core/json/json_known_fields.h"
#include "core/json/json_nesting.h"
#include "server/repository/privacy_spec.h"
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
  // Compared as sent: an unsigned above INT64_MAX read as int64 would wrap negative.
  const bool in_range =
      v.is_number_unsigned()
          ? v.get<std::uint64_t>() >= static_cast<std::uint64_t>(std::max(min, 0)) &&
                v.get<std::uint64_t>() <= static_cast<std::uint64_t>(max)
          : v.get<std::int64_t>() >= min && v.get<std::int64_t>() <= max;
  if (!in_range) {
    throw InvalidInput(std::string("population: '") + name + "' must be in [" +
                       std::to_string(min) + ", " + std::to_string(max) + "], got " + v.dump());
  }
  return static_cast<int>(v.get<std::int64_t>());
}

double positive_field(const json& body, const char* name, double fallback, double min, double max) {
  if (!body.contains(name)) return fallback;
  const json& v = body.at(name);
  if (!v.is_number()) {
    throw InvalidInput(std::string("population: '") + name + "' must be a number");
  }
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < min || (min == 0 && x <= 0) || x > max) {
    std::ostringstream rule;
    rule << std::setprecision(15) << "population: '" << name << "' must be a number "
         << (min == 0 ? "> " : ">= ") << min << " and <= " << max << ", got " << v.dump();
    throw InvalidInput(rule.str());
  }
  return x;
}

// "mode": "synchronous" (the default: rounds with a barrier) or "buffered" (buffered_spec.h).
// The buffered fields without "mode": "buffered" are refused: they would be ignored.
bool buffered_mode(const json& body) {
  bool buffered = false;
  if (body.contains("mode")) {
    const json& mode = body.at("mode");
    if (!mode.is_string() || (mode != "synchronous" && mode != "buffered")) {
      throw InvalidInput("population.mode: expected \"synchronous\" or \"buffered\", got " +
                         mode.dump());
    }
    buffered = mode == "buffered";
  }
  if (!buffered) {
    for (const char* field : {"buffer_size", "concurrency", "max_staleness", "staleness_weight",
                              "staleness_normalization"}) {
      if (body.contains(field)) {
        throw InvalidInput(std::string("population.") + field +
                           ": only with \"mode\": \"buffered\"");
      }
    }
  }
  return buffered;
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

PopulationSpec parse_population_body(const std::string& body_text) {
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
  core::check_known_fields(body, "population",
                           {"id",
                            "plan",
                            "initial_model_b64",
                            "seed",
                            "rounds",
                            "clients_per_round",
                            "min_reports",
                            "round_deadline_s",
                            "lease_s",
                            "over_selection",
                            "eval_tasks_per_round",
                            "server_optimizer",
                            "mode",
                            "buffer_size",
                            "concurrency",
                            "max_staleness",
                            "staleness_weight",
                            "staleness_normalization",
                            "max_tasks_per_client",
                            "privacy"});
  const bool buffered = buffered_mode(body);
  if (buffered && body.contains("privacy")) {
    throw InvalidInput(
        "population.privacy: buffered private populations are not supported (their privacy "
        "accounting is not carried); use \"mode\": \"synchronous\"");
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

  spec.settings.rounds = integer_field(body, "rounds", 1, 1, 1'000'000);
  if (buffered) {
    // A version is published every buffer_size reports, at once (never at a deadline with
    // fewer): the round fields that would say otherwise are refused, not ignored.
    for (const char* round_field : {"clients_per_round", "min_reports", "over_selection"}) {
      if (body.contains(round_field)) {
        throw InvalidInput(std::string("population.") + round_field +
                           ": not a field of \"mode\": \"buffered\" (a version is published "
                           "every buffer_size reports; concurrency sets the tasks out at once)");
      }
    }
    const core::BufferedSpec b = core::parse_buffered_spec(body, "population");
    spec.settings.buffered_json = core::buffered_spec_json(b);
    spec.settings.clients_per_round = static_cast<int>(b.buffer_size);
    spec.settings.min_reports = static_cast<int>(b.buffer_size);
    spec.settings.train_tasks_per_round = static_cast<int>(b.concurrency);
  }
  // Times past a year are a mistake (a lease that never ends holds its task for good).
  constexpr double kYear = 365.0 * 24 * 3600;
  spec.settings.round_deadline_s = positive_field(body, "round_deadline_s", 600, 0, kYear);
  spec.settings.lease_s = positive_field(body, "lease_s", 120, 0, kYear);
  if (!buffered) {
    spec.settings.clients_per_round = integer_field(body, "clients_per_round", 1, 1, 1'000'000);
    spec.settings.min_reports = integer_field(body, "min_reports", spec.settings.clients_per_round,
                                              1, spec.settings.clients_per_round);
    const double over_selection = positive_field(body, "over_selection", 1.0, 1.0, 10'000'000);
    const double tasks = std::ceil(spec.settings.clients_per_round * over_selection);
    if (tasks > 10'000'000) {
      throw InvalidInput("population: clients_per_round * over_selection must be <= 10000000");
    }
    spec.settings.train_tasks_per_round = static_cast<int>(tasks);
  }
  spec.settings.eval_tasks_per_round = integer_field(body, "eval_tasks_per_round", 0, 0, 1'000'000);
  // Absent: no bound (0). Both modes: a client holding every train task stalls a synchronous
  // round until its leases expire as it holds a buffered population's concurrency.
  spec.settings.max_tasks_per_client =
      integer_field(body, "max_tasks_per_client", 0, 1, 10'000'000);
  // Stored as the canonical JSON of what was parsed (every field of its type, defaults written
  // out), so a later default change never changes a running population; absent is FedAvg ("").
  if (body.contains("server_optimizer")) {
    spec.settings.server_optimizer_json = core::server_optimizer_json(
        core::parse_server_optimizer(body["server_optimizer"], "population.server_optimizer"));
  }
  if (body.contains("privacy")) {
    const PrivacySpec privacy = parse_privacy_spec(body["privacy"]);
    check_private_plan(body["plan"]);
    // A round's sum takes at most clients_per_round reports (its fixed size): more tasks would
    // spend devices' participations on reports it cannot use, and servers sharing a store could
    // together accept more reports than one round's sum may fold.
    if (spec.settings.train_tasks_per_round != spec.settings.clients_per_round) {
      throw InvalidInput(
          "population.over_selection: a private population's round hands out exactly "
          "clients_per_round train tasks (its sum's fixed size), so over_selection must be 1");
    }
    try {
      // The sum's own limits (no int64 overflow of clients_per_round clipped updates).
      core::PrivateSum check({}, private_sum_settings(privacy, spec.settings.clients_per_round));
    } catch (const InvalidInput& e) {
      throw InvalidInput(std::string("population.privacy: noise_multiplier, clip_norm and "
                                     "clients_per_round cannot be summed exactly (") +
                         e.what() + ")");
    }
    spec.settings.rounds = private_rounds(
        privacy, body.contains("rounds") ? std::optional<int>(spec.settings.rounds) : std::nullopt);
    spec.settings.privacy_json = privacy_spec_json(privacy);
  }
  return spec;
}

}  // namespace fedleaf::server
