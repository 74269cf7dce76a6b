#include "server/repository/privacy_spec.h"

#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json/json_known_fields.h"
#include "core/privacy/zcdp_conversion.h"

namespace fedleaf::server {
namespace {

using nlohmann::json;

constexpr const char* kPath = "population.privacy";

std::string field_path(const char* field) { return std::string(kPath) + "." + field; }

std::string shown(double x) {
  std::ostringstream out;
  out << std::setprecision(15) << x;
  return out.str();
}

// A number in (low, high] (low_open) or [low, high].
double number_field(const json& section, const char* field, double low, bool low_open,
                    double high) {
  if (!section.contains(field)) throw InvalidInput(field_path(field) + ": required");
  const json& v = section.at(field);
  const double x = v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
  const bool above = low_open ? x > low : x >= low;
  if (!v.is_number() || !std::isfinite(x) || !above || x > high) {
    throw InvalidInput(field_path(field) + ": must be a finite number " +
                       (low_open ? "> " : ">= ") + shown(low) + " and <= " + shown(high) +
                       ", got " + v.dump());
  }
  return x;
}

std::int64_t integer_field(const json& section, const char* field, std::int64_t low,
                           std::optional<std::int64_t> fallback) {
  constexpr std::int64_t kHigh = 2147483647;
  if (!section.contains(field)) {
    if (fallback) return *fallback;
    throw InvalidInput(field_path(field) + ": required");
  }
  const json& v = section.at(field);
  const bool ok =
      v.is_number_integer() &&
      (v.is_number_unsigned() ? v.get<std::uint64_t>() <= kHigh : v.get<std::int64_t>() >= low) &&
      v.get<std::int64_t>() >= low && v.get<std::int64_t>() <= kHigh;
  if (!ok) {
    throw InvalidInput(field_path(field) + ": must be an integer in [" + std::to_string(low) +
                       ", " + std::to_string(kHigh) + "], got " + v.dump());
  }
  return v.get<std::int64_t>();
}

core::PrivacyFieldNames field_names() {
  core::PrivacyFieldNames names;
  names.noise_multiplier = "population.privacy.noise_multiplier";
  names.delta = "population.privacy.delta";
  names.rounds = "population.rounds";
  names.max_participations = "population.privacy.max_participations";
  names.min_separation = "population.privacy.min_separation";
  return names;
}

core::DpFtrlAccountant accountant_of(const PrivacySpec& spec, std::int64_t rounds) {
  return core::DpFtrlAccountant({rounds, spec.max_participations, spec.min_separation},
                                field_names());
}

}  // namespace

PrivacySpec parse_privacy_spec(const json& section) {
  if (!section.is_object()) throw InvalidInput(std::string(kPath) + ": must be a JSON object");
  core::check_known_fields(
      section, kPath,
      {"mechanism", "noise_multiplier", "clip_norm", "delta", "max_epsilon", "max_participations",
       "min_separation", "enrollments_per_token_per_hour"});
  if (!section.contains("mechanism")) throw InvalidInput(field_path("mechanism") + ": required");
  if (section.at("mechanism") != "dp_ftrl_tree") {
    throw InvalidInput(field_path("mechanism") + ": must be \"dp_ftrl_tree\", got " +
                       section.at("mechanism").dump());
  }
  PrivacySpec spec;
  spec.noise_multiplier = number_field(section, "noise_multiplier", 0, true, 1e6);
  spec.clip_norm = number_field(section, "clip_norm", 0, true, 1e6);
  spec.delta = number_field(section, "delta", 0, true, 0.1);
  spec.max_epsilon = number_field(section, "max_epsilon", 0, true, 1e6);
  spec.max_participations = integer_field(section, "max_participations", 1, std::nullopt);
  spec.min_separation = integer_field(section, "min_separation", 0, std::nullopt);
  spec.enrollments_per_token_per_hour =
      integer_field(section, "enrollments_per_token_per_hour", 1, 1000);
  return spec;
}

std::string privacy_spec_json(const PrivacySpec& spec) {
  return json{{"mechanism", "dp_ftrl_tree"},
              {"noise_multiplier", spec.noise_multiplier},
              {"clip_norm", spec.clip_norm},
              {"delta", spec.delta},
              {"max_epsilon", spec.max_epsilon},
              {"max_participations", spec.max_participations},
              {"min_separation", spec.min_separation},
              {"enrollments_per_token_per_hour", spec.enrollments_per_token_per_hour}}
      .dump();
}

std::optional<PrivacySpec> privacy_spec_from_text(const std::string& text,
                                                  const std::string& path) {
  if (text.empty()) return std::nullopt;
  const json section = json::parse(text, nullptr, false);
  if (section.is_discarded()) throw InvalidInput(path + ": stored privacy is not JSON");
  return parse_privacy_spec(section);
}

core::PrivateSumSettings private_sum_settings(const PrivacySpec& spec, int clients_per_round) {
  return {spec.clip_norm, spec.noise_multiplier, clients_per_round, clients_per_round};
}

void check_private_plan(const json& plan) {
  const auto refuse = [](const std::string& where, const std::string& rule) {
    throw InvalidInput("population.plan." + where + ": " + rule +
                       " reads the data, and a private population publishes only its noised sum "
                       "(each device's whole update clipped at privacy.clip_norm); remove it");
  };
  if (plan.contains("max_examples_per_report") && plan["max_examples_per_report"].is_object()) {
    refuse("max_examples_per_report", "an adaptive example cap");
  }
  if (!plan.contains("updates") || !plan["updates"].is_object()) return;
  for (const auto& [name, entry] : plan["updates"].items()) {
    if (!entry.is_object()) continue;  // parse_update_plan names it
    const std::string where = "updates['" + name + "']";
    if (entry.contains("clip") && entry["clip"].is_object() && entry["clip"].contains("quantile")) {
      refuse(where + ".clip", "an adaptive clip (quantile)");
    }
    if (entry.contains("min_contributors") && entry["min_contributors"].is_number() &&
        entry["min_contributors"].get<double>() >= 2) {
      refuse(where + ".min_contributors", "row withholding (min_contributors >= 2)");
    }
  }
}

PrivacyLedger::PrivacyLedger(const PrivacySpec& spec, std::int64_t rounds)
    : spec_(spec), rounds_(rounds), accountant_(accountant_of(spec, rounds)) {}

double PrivacyLedger::epsilon_after(std::int64_t released) {
  if (released <= 0) return 0;
  const auto found = epsilon_.find(released);
  if (found != epsilon_.end()) return found->second;
  const double epsilon = accountant_.epsilon(spec_.noise_multiplier, spec_.delta, released);
  epsilon_.emplace(released, epsilon);
  return epsilon;
}

int private_rounds(const PrivacySpec& spec, std::optional<int> requested) {
  if (requested) {
    PrivacyLedger ledger(spec, *requested);
    const double epsilon = ledger.epsilon_at_end();
    if (epsilon > spec.max_epsilon) {
      throw InvalidInput("population.rounds: " + std::to_string(*requested) +
                         " rounds would reach epsilon " + shown(epsilon) +
                         ", past population.privacy.max_epsilon " + shown(spec.max_epsilon) +
                         " (fewer rounds, more noise or a larger budget)");
    }
    return *requested;
  }
  PrivacyLedger ledger(spec, kMaxDefaultPrivateRounds);
  if (ledger.epsilon_after(1) > spec.max_epsilon) {
    throw InvalidInput("population.privacy.max_epsilon: not even one round stays within " +
                       shown(spec.max_epsilon) + " (one round reaches epsilon " +
                       shown(ledger.epsilon_after(1)) + ")");
  }
  std::int64_t low = 1;                              // within the budget
  std::int64_t high = kMaxDefaultPrivateRounds + 1;  // past it (or past the cap)
  if (ledger.epsilon_after(kMaxDefaultPrivateRounds) <= spec.max_epsilon) {
    return static_cast<int>(kMaxDefaultPrivateRounds);
  }
  while (high - low > 1) {
    const std::int64_t mid = low + (high - low) / 2;
    (ledger.epsilon_after(mid) <= spec.max_epsilon ? low : high) = mid;
  }
  return static_cast<int>(low);
}

std::string privacy_guarantee(double epsilon_spent, double epsilon_at_end, double delta) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << "Any one device's participation changes the "
      << "probability of any published model by at most a factor e^ε (ε = " << epsilon_spent
      << " so far, " << epsilon_at_end << " at the end), except with probability δ = ";
  out << std::defaultfloat << std::setprecision(3) << delta << ".";
  return out.str();
}

}  // namespace fedleaf::server
