#include "server/repository/device_limits.h"

#include "server/repository/privacy_spec.h"

namespace fedleaf::server {

std::optional<DeviceLimits> device_limits(const PopulationSettings& settings) {
  // The section's one reader (privacy_spec.h): the stored text is what it wrote.
  const std::optional<PrivacySpec> spec =
      privacy_spec_from_text(settings.privacy_json, "population.privacy");
  if (!spec) return std::nullopt;
  return device_limits_of(*spec);
}

DeviceLimits device_limits_of(const PrivacySpec& spec) {
  // Each of the three is at most 2^31 - 1 (privacy_spec.cc).
  return DeviceLimits{static_cast<int>(spec.max_participations),
                      static_cast<int>(spec.min_separation),
                      static_cast<int>(spec.enrollments_per_token_per_hour)};
}

std::optional<ParticipationRefusal> participation_refusal(const DeviceRecord& device, int round,
                                                          const DeviceLimits& limits) {
  using Rule = ParticipationRefusal::Rule;
  if (device.participations >= limits.max_participations) {
    return ParticipationRefusal{
        Rule::kMaxParticipations, -1,
        "max_participations: this device has taken part in " +
            std::to_string(device.participations) +
            " rounds, the most the population allows: it may take no more tasks"};
  }
  if (device.last_round < 0) return std::nullopt;
  // Rounds strictly between the last one and this one.
  const long long between = static_cast<long long>(round) - device.last_round - 1;
  if (between >= limits.min_separation) return std::nullopt;
  const int retry_round = device.last_round + 1 + limits.min_separation;
  std::string message =
      round == device.last_round
          ? "min_separation: this device took a train task of round " + std::to_string(round) +
                " already (one per round)"
          : "min_separation: this device took part in round " + std::to_string(device.last_round) +
                " and the population allows its devices at " + "most one round in every " +
                std::to_string(limits.min_separation + 1);
  message += "; it may return at round " + std::to_string(retry_round);
  return ParticipationRefusal{Rule::kMinSeparation, retry_round, std::move(message)};
}

}  // namespace fedleaf::server
