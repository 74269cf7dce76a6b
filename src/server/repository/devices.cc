#include "server/repository/devices.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "server/repository/device_limits.h"
#include "server/util/secure_random_bits.h"
#include "server/util/server_errors.h"
#include "server/util/sha256.h"
#include "server/util/tokens.h"

namespace fedleaf::server {

namespace {

// `words` 64-bit words of the kernel's CSPRNG, as bytes.
std::string random_bytes(int words) {
  SecureRandomBits bits;
  std::string out;
  for (int i = 0; i < words; ++i) {
    const std::uint64_t w = bits.next();
    for (int b = 0; b < 8; ++b) out.push_back(static_cast<char>((w >> (8 * b)) & 0xff));
  }
  return out;
}

std::string base64url(const std::string& bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (const char c : bytes) {
    acc = (acc << 8) | static_cast<unsigned char>(c);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  return out;
}

}  // namespace

std::string generate_device_credential() { return base64url(random_bytes(4)); }

std::string generate_device_id() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : random_bytes(2)) {
    out.push_back(kHex[(static_cast<unsigned char>(c) >> 4) & 15]);
    out.push_back(kHex[static_cast<unsigned char>(c) & 15]);
  }
  return out;
}

Devices::Devices(RepositoryParts& parts) : parts_(parts) {}

EnrolledDevice Devices::enroll(const std::string& population_id, const std::string& client_token) {
  EnrolledDevice out{population_id, generate_device_id(), generate_device_credential()};
  DeviceRecord device;
  device.population_id = population_id;
  device.id = out.device_id;
  device.credential_hash = sha256_hex(out.credential);
  device.token_hash = hash_token(client_token);
  std::lock_guard lock(parts_.mutex);
  PopulationState& st = parts_.populations.state_of(population_id);
  if (!holds_client_token(st, device.token_hash)) {
    throw Forbidden("client token does not match a live token of population '" + population_id +
                    "'");
  }
  const std::optional<DeviceLimits>& limits = st.device_limits;
  if (!limits) {
    throw Conflict("population '" + population_id +
                   "' has no privacy section: only a private population enrolls devices (its "
                   "leaves claim with the client token alone)");
  }
  const double now = parts_.clock.now();
  device.enrolled_at = now;
  EnrollOutcome outcome;
  // In the open batch: the answer that shows the credential waits for its sync (Router), so a
  // flood of enrollments shares commits as claims do.
  parts_.batch.step("enroll device", [&] {
    outcome = parts_.store.enroll_device(device, limits->enrollments_per_token_per_hour);
  });
  if (!outcome.enrolled) {
    const double wait_s = std::max(1.0, outcome.retry_at.value_or(now + 3600) - now);
    throw TooManyRequests("enrollments_per_token_per_hour: this client token enrolled " +
                              std::to_string(limits->enrollments_per_token_per_hour) +
                              " devices of population '" + population_id +
                              "' in the last hour, the most the population allows; retry in " +
                              std::to_string(std::lround(std::ceil(wait_s))) + " s",
                          wait_s);
  }
  if (parts_.options.logger) {
    parts_.options.logger->info("event=device_enrolled population={} device={}", population_id,
                                out.device_id);
  }
  return out;
}

void Devices::revoke(const std::string& population_id, const std::string& device_id) {
  std::lock_guard lock(parts_.mutex);
  parts_.populations.state_of(population_id);  // NotFound for an unknown population
  bool revoked = false;
  parts_.batch.step(
      "revoke device",
      [&] { revoked = parts_.store.revoke_device(population_id, device_id, parts_.clock.now()); },
      Durability::kFull);
  if (!revoked) {
    throw Conflict("device '" + device_id + "' of population '" + population_id +
                   "' is revoked already");
  }
  if (parts_.options.logger) {
    parts_.options.logger->info("event=device_revoked population={} device={}", population_id,
                                device_id);
  }
}

DevicePage Devices::list(const std::string& population_id, const std::string& after_id) {
  std::lock_guard lock(parts_.mutex);
  parts_.populations.state_of(population_id);
  DevicePage page;
  page.devices = parts_.store.list_devices(population_id, after_id, kPageSize + 1);
  if (page.devices.size() > static_cast<std::size_t>(kPageSize)) {
    page.devices.resize(kPageSize);
    page.next_after = page.devices.back().id;
  }
  return page;
}

}  // namespace fedleaf::server
