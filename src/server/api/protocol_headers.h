// The protocol's own HTTP headers, named once for the router, the HTTP adapter and its CORS
// policy (a browser sees only the headers CORS exposes, so a name spelled twice can drift).
//
//   response.set_header(kFedleafRetryAfterMs, "250");
//   request.header(kFedleafVersion);   // Request::header matches any case
//   protocol_version() == "0.2";       // MAJOR.MINOR, stamped from CMake's project(VERSION)
#pragma once

#include <string>

#include "core/version.h"

namespace fedleaf::server {

// The protocol version a client sends and every response carries: MAJOR.MINOR.
inline constexpr const char* kFedleafVersion = "Fedleaf-Version";
// A retry hint in milliseconds, finer than Retry-After's whole seconds.
inline constexpr const char* kFedleafRetryAfterMs = "Fedleaf-Retry-After-Ms";
// "running", "paused" (an operator paused it: ask again later) or "finished" on a claim's 204:
// whether waiting can still bring a task.
inline constexpr const char* kFedleafPopulationState = "Fedleaf-Population-State";
// A private population's device credential on a claim (issue 39): what enrollment
// (POST /v1/populations/{p}/devices) issued; a claim without it is 401 "device_required".
inline constexpr const char* kFedleafDevice = "Fedleaf-Device";

// This server's protocol version, the value of its Fedleaf-Version header.
inline std::string protocol_version() {
  return std::to_string(kVersionMajor) + "." + std::to_string(kVersionMinor);
}

}  // namespace fedleaf::server
