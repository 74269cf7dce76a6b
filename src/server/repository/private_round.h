// What makes a private population's rounds private on the server (docs/design.md "Privacy"):
// its noise secret, the update plan its rounds run under, and its ε ledger.
//
//   record.privacy_secret = draw_privacy_secret();                   // at creation only
//   core::UpdatePlan plan = private_update_plan(parsed, record.settings);
//   core::TreeNoiseSecret secret = privacy_secret_of(record);       // at each round close
//
// A private round folds each report into a core::PrivateSum (RoundAggregator with
// UpdatePlan::privacy) and publishes only its noised release: the plan's operators, robust clips,
// row withholding and example caps are not used, and the adaptive rules are turned off here so
// that no round's settings follow the data either.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/aggregation/updates/update_plan.h"
#include "core/privacy/tree_noise.h"
#include "server/repository/privacy_spec.h"
#include "server/store/store.h"

namespace fedleaf::server {

// 32 bytes from the kernel's CSPRNG (secure_random_bits.h) as 64 lower-case hex digits.
std::string draw_privacy_secret();

// The record's secret; fedleaf::Error (a damaged store, not a request) unless it is 64 hex
// digits. Never put the secret or this error's subject into a log line or an answer.
core::TreeNoiseSecret privacy_secret_of(const PopulationRecord& record);

// `plan` for a population with settings.privacy_json: privacy set (the spec's clip and noise,
// denominator and max_reports clients_per_round), adaptive clips and the adaptive example cap
// off. Unchanged for a population without privacy.
core::UpdatePlan private_update_plan(core::UpdatePlan plan, const PopulationSettings& settings);

// The population's ledger (privacy spec and rounds), null when it is not private.
std::shared_ptr<PrivacyLedger> privacy_ledger_of(const PopulationRecord& record);

// Training rounds whose sums were released: the published models after round 0.
int rounds_released(const PopulationRecord& record, int current_round);

// The status's "privacy" object (mechanism, unit, the spec's settings, rounds_released,
// epsilon_spent, epsilon_at_end, epsilon_by_round: ε after each released round, guarantee).
// Holds nothing secret.
nlohmann::json privacy_status(PrivacyLedger& ledger, int released);

// Why a population finishes before opening training round `next_round` (0-based; it would be
// tree round next_round + 1): "" while ε after it stays within max_epsilon.
std::string privacy_budget_finish(PrivacyLedger& ledger, int next_round);

}  // namespace fedleaf::server
