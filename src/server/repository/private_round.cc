#include "server/repository/private_round.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/util/secure_random_bits.h"

namespace fedleaf::server {

std::string draw_privacy_secret() {
  SecureRandomBits bits;
  std::string hex;
  for (int word = 0; word < 4; ++word) {
    std::uint64_t w = bits.next();
    for (int byte = 0; byte < 8; ++byte) {
      char two[3];
      std::snprintf(two, sizeof two, "%02x", static_cast<unsigned>(w & 0xff));
      hex += two;
      w >>= 8;
    }
  }
  return hex;
}

core::TreeNoiseSecret privacy_secret_of(const PopulationRecord& record) {
  const std::string& hex = record.privacy_secret;
  core::TreeNoiseSecret secret{};
  const auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  bool ok = hex.size() == 2 * secret.size();
  for (std::size_t i = 0; ok && i < secret.size(); ++i) {
    const int high = digit(hex[2 * i]);
    const int low = digit(hex[2 * i + 1]);
    ok = high >= 0 && low >= 0;
    secret[i] = static_cast<std::uint8_t>(16 * high + low);
  }
  if (!ok) {
    throw Error("population '" + record.id +
                "': its stored privacy secret is not 64 hex digits (a damaged store)");
  }
  return secret;
}

core::UpdatePlan private_update_plan(core::UpdatePlan plan, const PopulationSettings& settings) {
  const std::optional<PrivacySpec> spec =
      privacy_spec_from_text(settings.privacy_json, "population privacy");
  if (!spec) return plan;
  for (core::TensorUpdatePlan& tensor : plan.tensors) tensor.adaptive_clip.reset();
  plan.adaptive_example_cap.reset();
  plan.privacy = private_sum_settings(*spec, settings.clients_per_round);
  return plan;
}

std::shared_ptr<PrivacyLedger> privacy_ledger_of(const PopulationRecord& record) {
  const std::optional<PrivacySpec> spec = privacy_spec_from_text(
      record.settings.privacy_json, "population '" + record.id + "': privacy");
  if (!spec) return nullptr;
  return std::make_shared<PrivacyLedger>(*spec, record.settings.rounds);
}

int rounds_released(const PopulationRecord& record, int current_round) {
  return std::min(current_round, record.settings.rounds);
}

nlohmann::json privacy_status(PrivacyLedger& ledger, int released) {
  const PrivacySpec& spec = ledger.spec();
  const double spent = ledger.epsilon_after(released);
  const double at_end = ledger.epsilon_at_end();
  nlohmann::json by_round = nlohmann::json::array();  // ε after rounds 1..released (dashboard)
  for (int r = 1; r <= released; ++r) by_round.push_back(ledger.epsilon_after(r));
  return {{"mechanism", "dp_ftrl_tree"},
          {"unit", "device"},
          {"noise_multiplier", spec.noise_multiplier},
          {"clip_norm", spec.clip_norm},
          {"delta", spec.delta},
          {"max_epsilon", spec.max_epsilon},
          {"max_participations", spec.max_participations},
          {"min_separation", spec.min_separation},
          {"enrollments_per_token_per_hour", spec.enrollments_per_token_per_hour},
          {"rounds_released", released},
          {"epsilon_spent", spent},
          {"epsilon_at_end", at_end},
          {"epsilon_by_round", std::move(by_round)},
          {"guarantee", privacy_guarantee(spent, at_end, spec.delta)}};
}

std::string privacy_budget_finish(PrivacyLedger& ledger, int next_round) {
  const std::int64_t tree_round = static_cast<std::int64_t>(next_round) + 1;
  if (tree_round > ledger.rounds()) return "";  // training is over anyway
  const double epsilon = ledger.epsilon_after(tree_round);
  if (epsilon <= ledger.spec().max_epsilon) return "";
  char text[200];
  std::snprintf(text, sizeof text,
                "privacy budget: round %d would reach epsilon %.4g, past max_epsilon %.4g",
                next_round, epsilon, ledger.spec().max_epsilon);
  return text;
}

}  // namespace fedleaf::server
