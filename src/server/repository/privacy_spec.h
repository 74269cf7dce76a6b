// The "privacy" section of a population spec: a device-level (ε, δ) guarantee by DP-FTRL with
// tree aggregation (docs/design.md "Privacy").
//
//   "privacy": {"mechanism": "dp_ftrl_tree", "noise_multiplier": 1.1, "clip_norm": 0.5,
//               "delta": 1e-6, "max_epsilon": 8, "max_participations": 4, "min_separation": 9}
//
// Fields (all required but the last; any other field is InvalidInput):
//   mechanism           "dp_ftrl_tree", the only one
//   noise_multiplier    σ > 0, finite, <= 1e6: every tree node's noise has sd σ × clip_norm
//   clip_norm           C > 0, finite, <= 1e6: L2 bound over a device's whole update
//   delta               δ in (0, 0.1]
//   max_epsilon         ε > 0, finite: the budget; no round opens past it
//   max_participations  k >= 1: rounds one device may contribute to
//   min_separation      s >= 0: rounds strictly between two rounds of one device
//   enrollments_per_token_per_hour  n >= 1 (default 1000): device enrollments per client token
// Errors are InvalidInput naming "population.privacy.<field>" and the rule.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/privacy/dp_ftrl_accountant.h"
#include "core/privacy/private_sum.h"

namespace fedleaf::server {

struct PrivacySpec {
  double noise_multiplier = 0;
  double clip_norm = 0;
  double delta = 0;
  double max_epsilon = 0;
  std::int64_t max_participations = 0;
  std::int64_t min_separation = 0;
  std::int64_t enrollments_per_token_per_hour = 1000;
};

// The most rounds a private population's default `rounds` may reach: past it the run must state
// its rounds (the accountant's tables grow with the rounds' levels).
inline constexpr std::int64_t kMaxDefaultPrivateRounds = 100000;

PrivacySpec parse_privacy_spec(const nlohmann::json& section);
// Canonical compact JSON (every field, "mechanism" included): what the store keeps; and its
// inverse for stored text, nullopt for "" (not private). InvalidInput naming `path` for text that
// is not a privacy section.
std::string privacy_spec_json(const PrivacySpec& spec);
std::optional<PrivacySpec> privacy_spec_from_text(const std::string& text, const std::string& path);

// What a round of the population sums with: the spec's clip and noise, over a fixed denominator
// and at most that many reports (the round's clients_per_round).
core::PrivateSumSettings private_sum_settings(const PrivacySpec& spec, int clients_per_round);

// Refuses (InvalidInput "population.plan.updates['<t>'].<field>: ...") the plan's explicit
// data-dependent rules: an adaptive clip ("quantile"), row withholding ("min_contributors" >= 2),
// an adaptive example cap (max_examples_per_report's object form). Rules on by default are not
// refused; a private round never runs them (private_update_plan).
void check_private_plan(const nlohmann::json& plan);

// The accountant of a private run of `rounds` rounds, and ε after r of them at the spec's δ,
// each r computed once (the accountant's tables cost up to a fraction of a second to build, an ε
// microseconds): a population holds one from its load on.
class PrivacyLedger {
 public:
  PrivacyLedger(const PrivacySpec& spec, std::int64_t rounds);
  const PrivacySpec& spec() const { return spec_; }
  std::int64_t rounds() const { return rounds_; }
  // ε after `released` rounds (0: none, ε 0), 0 <= released <= rounds; InvalidInput past it.
  double epsilon_after(std::int64_t released);
  double epsilon_at_end() { return epsilon_after(rounds_); }

 private:
  PrivacySpec spec_;
  std::int64_t rounds_;
  core::DpFtrlAccountant accountant_;
  std::map<std::int64_t, double> epsilon_;
};

// The rounds of a private population: `requested` when given (InvalidInput naming
// population.rounds and population.privacy.max_epsilon with the ε it would reach, when past
// max_epsilon), else the most rounds up to kMaxDefaultPrivateRounds whose ε stays within
// max_epsilon (InvalidInput naming max_epsilon when not even one round does).
int private_rounds(const PrivacySpec& spec, std::optional<int> requested);

// The sentence the status and dashboard show: what ε means for one device.
std::string privacy_guarantee(double epsilon_spent, double epsilon_at_end, double delta);

}  // namespace fedleaf::server
