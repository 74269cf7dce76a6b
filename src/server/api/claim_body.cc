#include "server/api/claim_body.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "core/json/json_duplicate_keys.h"
#include "core/text/text_format.h"
#include "server/util/server_errors.h"

namespace fedleaf::server {

ClaimBody parse_claim_body(const std::string& body) {
  ClaimBody out;
  if (body.empty()) return out;
  if (body.size() > kMaxClaimBodyBytes) {
    throw PayloadTooLarge("claim body: " + std::to_string(body.size()) + " bytes exceeds the " +
                          std::to_string(kMaxClaimBodyBytes) + " bytes a claim body may have");
  }
  // A field given twice is an error, as in every other body the server reads: "the last one
  // wins" would let a proxy and the server read different claims.
  core::DuplicateKeys duplicates;
  const nlohmann::json parsed = nlohmann::json::parse(body, duplicates.callback(), false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    throw InvalidInput("claim body: must be a JSON object such as {\"min_round\": 3}");
  }
  if (duplicates.found()) {
    throw InvalidInput("claim body: the field " + duplicates.describe() + " appears twice");
  }
  if (const auto it = parsed.find("min_round"); it != parsed.end()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0 ||
        it->get<std::int64_t>() > 1'000'000'000) {
      throw InvalidInput("claim body: min_round must be an integer in [0, 1000000000]");
    }
    out.min_round = static_cast<int>(it->get<std::int64_t>());
  }
  if (const auto it = parsed.find("wait_s"); it != parsed.end()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
      throw InvalidInput("claim body: wait_s must be a number of seconds >= 0");
    }
    out.wait_s = std::min(it->get<double>(), kMaxClaimWaitS);
  }
  return out;
}

}  // namespace fedleaf::server
