// Devices: a private population's devices as leaves and operators manage them (issue 39,
// docs/design.md "Privacy"): POST /v1/populations/{p}/devices (a leaf enrolls under the
// population's client token), GET .../devices and POST .../devices/{id}:revoke (the admin).
//
//   Devices devices(parts);
//   EnrolledDevice d = devices.enroll("spam", client_token);  // d.credential is shown once
//   devices.revoke("spam", d.device_id);                       // its claims get 403 from now on
//
// Only the SHA-256 of a credential is kept. Each enrollment and revocation is committed and
// synced before it returns (a leaf never holds a credential the store could lose). Enrollments
// are limited per client token to the section's enrollments_per_token_per_hour in any hour,
// counted in the store (across servers): past it 429 naming the rule, with Retry-After.
//
// Errors: NotFound (404) an unknown population or device; Forbidden (403) a client token that is
// not a live token of the population; Conflict (409) enrollment in a population without a
// privacy section, a device revoked already. Locking: each call takes parts.mutex itself.
#pragma once

#include <string>
#include <vector>

#include "server/repository/repository_parts.h"
#include "server/store/device_store.h"

namespace fedleaf::server {

struct EnrolledDevice {
  std::string population;
  std::string device_id;
  std::string credential;  // shown once
};

// A page of a population's devices, ordered by id; next_after: the id to ask after for the next
// page ("" when this is the last).
struct DevicePage {
  std::vector<DeviceRecord> devices;
  std::string next_after;
};

class Devices {
 public:
  static constexpr int kPageSize = 1000;

  explicit Devices(RepositoryParts& parts);

  EnrolledDevice enroll(const std::string& population_id, const std::string& client_token);
  // Revokes a live device: its claims get 403 from now on, on every server sharing the store
  // (each claim reads its device). Its leases out may still report.
  void revoke(const std::string& population_id, const std::string& device_id);
  // The devices with an id after `after_id` ("": from the first), kPageSize at most.
  DevicePage list(const std::string& population_id, const std::string& after_id);

 private:
  RepositoryParts& parts_;
};

// A new credential: 32 bytes of the kernel's CSPRNG (SecureRandomBits), base64url without
// padding (43 characters).
std::string generate_device_credential();
// A new device id: 16 bytes of the kernel's CSPRNG as lower-case hex (32 characters).
std::string generate_device_id();

}  // namespace fedleaf::server
