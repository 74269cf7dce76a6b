// The names privacy settings carry in error messages: the population spec's snake_case names by
// default; the JS calculator passes its camelCase ones, so that every message names the field
// exactly as its caller wrote it.
//
//   PrivacyFieldNames names;                 // "noise_multiplier", "min_separation", ...
//   names.noise_multiplier = "noiseMultiplier";
#pragma once

namespace fedleaf::core {

struct PrivacyFieldNames {
  const char* noise_multiplier = "noise_multiplier";
  const char* target_epsilon = "target_epsilon";
  const char* delta = "delta";
  const char* rounds = "rounds";
  const char* max_participations = "max_participations";
  const char* min_separation = "min_separation";
  const char* devices = "devices";
  const char* per_round = "per_round";
};

}  // namespace fedleaf::core
