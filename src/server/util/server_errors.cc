#include "server/util/server_errors.h"

namespace fedleaf::server {

ErrorReply error_reply(const std::exception& error) {
  const std::string message = error.what();
  // Most derived classes first: every server error also is a fedleaf::Error.
  if (dynamic_cast<const DeviceRequired*>(&error)) return {401, "device_required", message};
  if (dynamic_cast<const ParticipationsUsed*>(&error)) return {403, "max_participations", message};
  if (const auto* soon = dynamic_cast<const DeviceTooSoon*>(&error)) {
    return {429, "min_separation", message, soon->retry_round()};
  }
  if (dynamic_cast<const InvalidInput*>(&error)) return {400, "invalid_input", message};
  if (dynamic_cast<const Unauthorized*>(&error)) return {401, "unauthorized", message};
  if (dynamic_cast<const Forbidden*>(&error)) return {403, "forbidden", message};
  if (dynamic_cast<const NotFound*>(&error)) return {404, "not_found", message};
  if (dynamic_cast<const MethodNotAllowed*>(&error)) return {405, "method_not_allowed", message};
  if (dynamic_cast<const RequestTimeout*>(&error)) return {408, "request_timeout", message};
  if (dynamic_cast<const Conflict*>(&error)) return {409, "conflict", message};
  if (dynamic_cast<const Gone*>(&error)) return {410, "gone", message};
  if (dynamic_cast<const PayloadTooLarge*>(&error)) return {413, "payload_too_large", message};
  if (dynamic_cast<const UpgradeRequired*>(&error)) return {426, "upgrade_required", message};
  if (dynamic_cast<const TooManyRequests*>(&error)) return {429, "too_many_requests", message};
  if (dynamic_cast<const Unavailable*>(&error)) return {503, "unavailable", message};
  if (dynamic_cast<const Error*>(&error)) return {500, "internal", message};
  return {500, "internal", "internal server error"};
}

}  // namespace fedleaf::server
