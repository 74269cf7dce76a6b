#include "server/repository/device_limits.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace fedleaf::server {

namespace {

using nlohmann::json;

int limit_field(const json& privacy, const char* name, std::optional<int> fallback, int min,
                int max) {
  const std::string field = std::string("population.privacy.") + name;
  if (!privacy.contains(name)) {
    if (fallback) return *fallback;
    throw InvalidInput(
        field + ": required in a privacy section (an integer >= " + std::to_string(min) + ")");
  }
  const json& v = privacy.at(name);
  // Compared as sent: an unsigned above INT64_MAX read as int64 would wrap negative.
  const bool in_range =
      v.is_number_integer() &&
      (v.is_number_unsigned() ? v.get<std::uint64_t>() >= static_cast<std::uint64_t>(min) &&
                                    v.get<std::uint64_t>() <= static_cast<std::uint64_t>(max)
                              : v.get<std::int64_t>() >= min && v.get<std::int64_t>() <= max);
  if (!in_range) {
    throw InvalidInput(field + ": must be an integer in [" + std::to_string(min) + ", " +
                       std::to_string(max) + "], got " + v.dump());
  }
  return static_cast<int>(v.get<std::int64_t>());
}

}  // namespace

std::optional<DeviceLimits> device_limits(const PopulationSettings& settings) {
  if (settings.privacy_json.empty()) return std::nullopt;
  const json privacy = json::parse(settings.privacy_json, nullptr, false);
  if (privacy.is_discarded() || !privacy.is_object()) {
    throw InvalidInput("population.privacy: must be a JSON object");
  }
  DeviceLimits limits;
  limits.max_participations =
      limit_field(privacy, "max_participations", std::nullopt, 1, 1'000'000);
  limits.min_separation = limit_field(privacy, "min_separation", std::nullopt, 0, 1'000'000);
  limits.enrollments_per_token_per_hour =
      limit_field(privacy, "enrollments_per_token_per_hour", 1000, 1, 1'000'000'000);
  return limits;
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
