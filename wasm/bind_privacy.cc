// JS API of the privacy calculator (js_bindings/src/privacy/plan_privacy.js wraps it):
//
//   const plan = module.planPrivacy({devices: 3e6, perRound: 6500, rounds: 2000,
//       maxParticipations: 6, minSeparation: 313, delta: 1e-10, noiseMultiplier: 7});
//   plan.epsilon;   // 8.90; plan.rho, plan.noiseMultiplier, plan.feasible, ...
//
// The settings object is read here with the JS names; every range rule is core's
// (core/privacy/privacy_plan.h), and its messages name the fields as JS spells them.
#include <emscripten/bind.h>

#include <cmath>
#include <optional>
#include <set>
#include <string>

#include "core/error.h"
#include "core/privacy/privacy_plan.h"
#include "js_interop.h"

namespace fedleaf::wasm {
namespace {

core::PrivacyFieldNames js_names() {
  core::PrivacyFieldNames names;
  names.noise_multiplier = "noiseMultiplier";
  names.target_epsilon = "targetEpsilon";
  names.delta = "delta";
  names.rounds = "rounds";
  names.max_participations = "maxParticipations";
  names.min_separation = "minSeparation";
  names.devices = "devices";
  names.per_round = "perRound";
  return names;
}

// A count: an integer Number (2^53 at most); undefined, a string or 2.5 names the field.
std::int64_t integer_field(const val& settings, const char* name) {
  const val v = settings[name];
  const double d = v.isNumber() ? v.as<double>() : std::nan("");
  if (!std::isfinite(d) || std::floor(d) != d || std::abs(d) > 9007199254740991.0) {
    throw InvalidInput(std::string(name) + ": must be an integer");
  }
  return static_cast<std::int64_t>(d);
}

double number_field(const val& settings, const char* name) {
  const val v = settings[name];
  if (!v.isNumber()) throw InvalidInput(std::string(name) + ": must be a number");
  return v.as<double>();
}

std::optional<double> optional_number(const val& settings, const char* name) {
  if (settings[name].isUndefined()) return std::nullopt;
  return number_field(settings, name);
}

val plan_privacy(val settings) {
  return call_from_js([&] {
    if (settings.typeOf().as<std::string>() != "object" || settings.isNull()) {
      throw InvalidInput("planPrivacy: settings must be an object");
    }
    static const std::set<std::string> known = {"devices",         "perRound",         "rounds",
                                                "noiseMultiplier", "targetEpsilon",    "delta",
                                                "minSeparation",   "maxParticipations"};
    const val keys = val::global("Object").call<val>("keys", settings);
    for (unsigned i = 0; i < keys["length"].as<unsigned>(); ++i) {
      const auto key = keys[i].as<std::string>();
      if (known.count(key) == 0) {
        throw InvalidInput("planPrivacy: unknown field '" + key +
                           "' (known: devices, perRound, rounds, noiseMultiplier, "
                           "targetEpsilon, delta, minSeparation, maxParticipations)");
      }
    }
    core::PrivacyPlanInput in;
    in.devices = integer_field(settings, "devices");
    in.per_round = integer_field(settings, "perRound");
    in.rounds = integer_field(settings, "rounds");
    in.max_participations = integer_field(settings, "maxParticipations");
    in.min_separation = integer_field(settings, "minSeparation");
    in.delta = number_field(settings, "delta");
    in.noise_multiplier = optional_number(settings, "noiseMultiplier");
    in.target_epsilon = optional_number(settings, "targetEpsilon");
    const core::PrivacyPlan plan = core::plan_privacy(in, js_names());

    val out = val::object();
    out.set("epsilon", plan.epsilon);
    out.set("delta", plan.delta);
    out.set("rho", plan.rho);
    out.set("noiseMultiplier", plan.noise_multiplier);
    out.set("squaredSensitivity", static_cast<double>(plan.squared_sensitivity));
    out.set("participationsPossible", static_cast<double>(plan.participations_possible));
    out.set("deviceRoundsNeeded", static_cast<double>(plan.device_rounds_needed));
    out.set("deviceRoundsAvailable", static_cast<double>(plan.device_rounds_available));
    out.set("devicesNeededPerWindow", static_cast<double>(plan.devices_needed_per_window));
    out.set("devicesNeeded", static_cast<double>(plan.devices_needed));
    out.set("feasible", plan.feasible);
    out.set("meanParticipations", plan.mean_participations);
    return out;
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(fedleaf_privacy) { emscripten::function("planPrivacy", &plan_privacy); }

}  // namespace fedleaf::wasm
