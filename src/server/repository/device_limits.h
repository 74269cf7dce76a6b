// A private population's device limits (issue 39, docs/design.md "Privacy"): read from its
// privacy section (PopulationSettings::privacy_json), and the participation rules a train claim
// is checked against.
//
//   std::optional<DeviceLimits> limits = device_limits(st.record.settings);  // nullopt: public
//   if (auto refusal = participation_refusal(device, round, *limits)) { /* no task */ }
//
// min_separation counts the rounds strictly between two rounds one device contributes to: a
// device whose last round is L may take round r only if r − L − 1 >= min_separation (so never L
// itself: one train task per device per round).
#pragma once

#include <optional>
#include <string>

#include "server/store/device_store.h"
#include "server/store/population_settings.h"

namespace fedleaf::server {

struct PrivacySpec;

struct DeviceLimits {
  int max_participations = 1;                 // >= 1
  int min_separation = 0;                     // >= 0
  int enrollments_per_token_per_hour = 1000;  // >= 1
};

// The limits of the section's max_participations, min_separation and
// enrollments_per_token_per_hour, read by the section's one reader (privacy_spec.h); nullopt
// when the population has no privacy section. InvalidInput naming "population.privacy" for
// stored text that is not a privacy section.
std::optional<DeviceLimits> device_limits(const PopulationSettings& settings);
// The limits of a parsed section.
DeviceLimits device_limits_of(const PrivacySpec& spec);

struct ParticipationRefusal {
  enum class Rule { kMaxParticipations, kMinSeparation };
  Rule rule = Rule::kMinSeparation;
  int retry_round = -1;  // kMinSeparation: the first round the device may take
  std::string message;   // names the rule, and when the device may return
};

// Why `device` may not take a train task of `round`; nullopt when it may.
std::optional<ParticipationRefusal> participation_refusal(const DeviceRecord& device, int round,
                                                          const DeviceLimits& limits);

}  // namespace fedleaf::server
