// What the store keeps of a private population's devices (issue 39, docs/design.md "Privacy"):
// one row per enrolled device, found by the hash of its credential, with its participations.
//
//   DeviceRecord d{"spam", device_id, sha256_hex(credential), hash_token(client_token), now};
//   EnrollOutcome e = store.enroll_device(d, /*max_per_hour=*/1000);
//   std::optional<DeviceRecord> found = store.find_device("spam", sha256_hex(credential), true);
//   store.record_participation("spam", found->id, round);
#pragma once

#include <optional>
#include <string>

namespace fedleaf::server {

struct DeviceRecord {
  std::string population_id;
  std::string id;               // random, public: what an operator lists and revokes
  std::string credential_hash;  // hex SHA-256 of the credential (the credential is never kept)
  std::string token_hash;       // hex SHA-256 of the client token it enrolled under
  double enrolled_at = 0;
  double revoked_at = 0;  // 0 while live
  // Train tasks leased to it (rounds it took part in) and the last round it took (-1: none).
  int participations = 0;
  int last_round = -1;
};

// enroll_device: stored, or refused by the per-token hourly limit (nothing stored) with the
// time the oldest enrollment of the last hour leaves the window.
struct EnrollOutcome {
  bool enrolled = false;
  std::optional<double> retry_at;
};

}  // namespace fedleaf::server
