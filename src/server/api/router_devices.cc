// Router (router.h): a private population's devices (issue 39, docs/design.md "Privacy").
//   POST /v1/populations/{p}/devices               client token → 201 {"device_id", "credential"}
//   GET  /v1/populations/{p}/devices[?after=ID]    admin → {"devices": [...], "next_after"}
//   POST /v1/populations/{p}/devices/{id}:revoke   admin → {"device_id", "revoked": true}
// A listing never shows a credential or its hash.
#include <nlohmann/json.hpp>

#include "server/api/router.h"
#include "server/api/router_helpers.h"
#include "server/util/server_errors.h"

namespace fedleaf::server {

namespace {

// The `after` parameter of the target's query ("" when absent). Device ids are hex: a value
// that is not is refused rather than decoded.
std::string after_parameter(const Request& request) {
  const std::size_t q = request.target.find('?');
  if (q == std::string::npos) return {};
  const std::string query = request.target.substr(q + 1);
  std::size_t pos = 0;
  while (pos <= query.size()) {
    const std::size_t amp = query.find('&', pos);
    const std::string pair = query.substr(pos, amp == std::string::npos ? amp : amp - pos);
    if (pair.rfind("after=", 0) == 0) {
      std::string value = pair.substr(6);
      for (const char c : value) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
          throw InvalidInput("devices: 'after' must be a device id (lower-case hex)");
        }
      }
      return value;
    }
    if (amp == std::string::npos) break;
    pos = amp + 1;
  }
  return {};
}

nlohmann::json device_json(const DeviceRecord& d) {
  return {{"id", d.id},
          {"enrolled_at", d.enrolled_at},
          {"participations", d.participations},
          {"last_round", d.last_round < 0 ? nlohmann::json() : nlohmann::json(d.last_round)},
          {"revoked", d.revoked_at != 0},
          {"revoked_at", d.revoked_at != 0 ? nlohmann::json(d.revoked_at) : nlohmann::json()}};
}

bool is_device_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (const char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

Response Router::devices_response(const Request& request, const std::string& population,
                                  const std::string* action) const {
  if (action == nullptr) {
    require_method(request, {"GET", "POST"});
    if (request.method == "POST") {
      const EnrolledDevice enrolled = repository_.enroll_device(population, bearer(request));
      Response r = Response::json(201, nlohmann::json{{"device_id", enrolled.device_id},
                                                      {"credential", enrolled.credential}}
                                           .dump());
      r.set_header("Cache-Control", "no-store");
      r.send_after = SendAfter::kSync;  // a credential is shown once: only once it is durable
      return r;
    }
    check_admin(request);
    const DevicePage page = repository_.devices(population, after_parameter(request));
    nlohmann::json list = nlohmann::json::array();
    for (const DeviceRecord& d : page.devices) list.push_back(device_json(d));
    return Response::json(200, nlohmann::json{{"devices", list},
                                              {"next_after", page.next_after.empty()
                                                                 ? nlohmann::json()
                                                                 : nlohmann::json(page.next_after)}}
                                   .dump());
  }
  const std::size_t colon = action->rfind(':');
  if (colon == std::string::npos || action->compare(colon, std::string::npos, ":revoke") != 0) {
    throw NotFound("no such path: " + request.path() + " (a device's action is :revoke)");
  }
  const std::string device_id = action->substr(0, colon);
  if (!is_device_id(device_id)) {
    throw NotFound("device '" + device_id + "' does not exist (a device id is lower-case hex)");
  }
  require_method(request, {"POST"});
  check_admin(request);
  repository_.revoke_device(population, device_id);
  return Response::json(200, nlohmann::json{{"device_id", device_id}, {"revoked", true}}.dump());
}

}  // namespace fedleaf::server
