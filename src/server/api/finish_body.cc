#include "server/api/finish_body.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "core/json/json_duplicate_keys.h"
#include "server/util/server_errors.h"

namespace fedleaf::server {

std::string parse_finish_reason(const std::string& body) {
  if (body.empty()) return "";
  if (body.size() > kMaxFinishBodyBytes) {
    throw PayloadTooLarge("finish body: " + std::to_string(body.size()) + " bytes exceeds the " +
                          std::to_string(kMaxFinishBodyBytes) + " bytes a finish body may have");
  }
  core::DuplicateKeys duplicates;
  const nlohmann::json parsed = nlohmann::json::parse(body, duplicates.callback(), false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    throw InvalidInput("finish body: must be a JSON object such as {\"reason\": \"...\"}");
  }
  if (duplicates.found()) {
    throw InvalidInput("finish body: the field " + duplicates.describe() + " appears twice");
  }
  for (const auto& field : parsed.items()) {
    if (field.key() != "reason") {
      throw InvalidInput("finish body: unknown field '" + field.key() + "' (known: reason)");
    }
  }
  const auto it = parsed.find("reason");
  if (it == parsed.end()) return "";
  if (!it->is_string()) throw InvalidInput("finish body: reason must be a string");
  std::string reason = it->get<std::string>();
  // Characters, not bytes: the string is valid UTF-8 (the parser checked it).
  const auto chars = std::count_if(reason.begin(), reason.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  });
  if (static_cast<std::size_t>(chars) > kMaxFinishReasonChars) {
    throw InvalidInput("finish body: reason has " + std::to_string(chars) + " characters, over " +
                       std::to_string(kMaxFinishReasonChars));
  }
  if (std::any_of(reason.begin(), reason.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    throw InvalidInput("finish body: reason must not hold control characters (a newline, a tab)");
  }
  return reason;
}

}  // namespace fedleaf::server
