// What the store keeps of a private population's devices (issue 39, docs/design.md "Privacy"):
// one row per enrolled device, found by the hash of its credential, with its participations; and
// the store's device operations (DeviceStore, a part of the Store interface, store.h: the same
// contracts of transactions, atomicity and errors).
//
//   DeviceRecord d{"spam", device_id, sha256_hex(credential), hash_token(client_token), now};
//   EnrollOutcome e = store.enroll_device(d, /*max_per_hour=*/1000);
//   std::optional<DeviceRecord> found = store.find_device("spam", sha256_hex(credential), true);
//   store.record_participation("spam", found->id, round);
#pragma once

#include <optional>
#include <string>
#include <vector>

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

class DeviceStore {
 public:
  virtual ~DeviceStore() = default;

  // Stores `device` unless its client token (token_hash) enrolled `max_per_hour` devices of the
  // population in the hour before device.enrolled_at, read in the store (enrollers with one
  // token take turns: PostgreSQL locks the population and token first), so the limit holds across
  // servers; its cost does not grow with the devices enrolled (each token's enrollments are
  // numbered: one index probe reads the one max_per_hour back). Conflict: the credential hash is
  // taken; NotFound: unknown population.
  virtual EnrollOutcome enroll_device(const DeviceRecord& device, int max_per_hour) = 0;
  // The device whose credential hashes to `credential_hash`, revoked or not (nullopt: none);
  // with `lock` its row stays locked until the transaction ends (PostgreSQL: a claim checks and
  // records its participation under the lock, so two servers never both admit one device).
  virtual std::optional<DeviceRecord> find_device(const std::string& population_id,
                                                  const std::string& credential_hash,
                                                  bool lock) = 0;
  // A train task leased to the device for `round`: participations + 1, last_round = round.
  virtual void record_participation(const std::string& population_id, const std::string& device_id,
                                    int round) = 0;
  // Revokes a live device at `now`: true. False, changing nothing, for one revoked already;
  // NotFound for an unknown population or device.
  virtual bool revoke_device(const std::string& population_id, const std::string& device_id,
                             double now) = 0;
  // The population's devices ordered by id, at most `limit` of those with an id after `after_id`
  // ("": from the first).
  virtual std::vector<DeviceRecord> list_devices(const std::string& population_id,
                                                 const std::string& after_id, int limit) = 0;
};

}  // namespace fedleaf::server
