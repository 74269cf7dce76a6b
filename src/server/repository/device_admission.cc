// TaskClaims (task_claims.h): a private population's device on a claim — its credential read
// before any pool is tried; a train lease checks its limits again under the device's lock and
// records the participation (TaskClaims::lease).
#include <algorithm>

#include "server/repository/task_claims.h"
#include "server/util/server_errors.h"
#include "server/util/sha256.h"

namespace fedleaf::server {

DeviceRecord TaskClaims::admit_device(const PopulationState& st, const std::string& credential) {
  const std::string& id = st.record.id;
  if (credential.empty()) {
    throw DeviceRequired("population '" + id +
                         "' is private: a claim must carry the Fedleaf-Device header with this "
                         "device's credential; enroll first (POST /v1/populations/" +
                         id + "/devices)");
  }
  std::optional<DeviceRecord> device = parts_.store.find_device(id, sha256_hex(credential), false);
  if (!device) {
    throw Forbidden("the Fedleaf-Device credential is not a device of population '" + id + "'");
  }
  if (device->revoked_at != 0) {
    throw Forbidden("device '" + device->id + "' of population '" + id + "' is revoked");
  }
  return *device;
}

void TaskClaims::throw_refusal(const ParticipationRefusal& refusal, const PopulationState& st,
                               double now) {
  if (refusal.rule == ParticipationRefusal::Rule::kMaxParticipations) {
    throw ParticipationsUsed(refusal.message);
  }
  const double until_deadline = st.round.deadline - now;
  throw DeviceTooSoon(refusal.message, std::max(1.0, until_deadline), refusal.retry_round);
}

}  // namespace fedleaf::server
