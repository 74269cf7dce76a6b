#include "server/http/cors_policy.h"

#include <algorithm>

#include "server/api/protocol_headers.h"

namespace fedleaf::server {

CorsPolicy::CorsPolicy(std::vector<std::string> origins)
    : origins_(std::move(origins)),
      any_(std::find(origins_.begin(), origins_.end(), "*") != origins_.end()) {}

bool CorsPolicy::allows(const std::string& origin) const {
  if (origin.empty()) return false;
  return any_ || std::find(origins_.begin(), origins_.end(), origin) != origins_.end();
}

HeaderList CorsPolicy::preflight_headers(const std::string& origin) const {
  if (!allows(origin)) return {};
  return {{"Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, OPTIONS"},
          {"Access-Control-Allow-Headers", std::string("Authorization, Content-Type, ") +
                                               kFedleafVersion + ", " + kFedleafDevice +
                                               ", If-None-Match"},
          {"Access-Control-Max-Age", "600"}};
}

HeaderList CorsPolicy::response_headers(const std::string& origin) const {
  if (!allows(origin)) return {};
  return {{"Access-Control-Allow-Origin", any_ ? "*" : origin},
          {"Vary", "Origin"},
          {"Access-Control-Expose-Headers",
           std::string("ETag, Retry-After, ") + kFedleafRetryAfterMs + ", " +
               kFedleafPopulationState + ", " + kFedleafVersion + ", Location"}};
}

}  // namespace fedleaf::server
