#include "core/json/json_known_fields.h"

#include <algorithm>

#include "core/error.h"
#include "core/text/text_format.h"

namespace fedleaf::core {

bool is_known_field(const std::string& key, FieldList known) {
  return std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; });
}

void check_known_fields(const nlohmann::json& object, const std::string& path, FieldList known) {
  for (const auto& item : object.items()) {
    if (is_known_field(item.key(), known)) continue;
    std::string listed;
    for (const char* k : known) listed += (listed.empty() ? "" : ", ") + std::string(k);
    throw InvalidInput(path + ": unknown field " + in_quotes(item.key()) + " (the fields are " +
                       listed + ")");
  }
}

}  // namespace fedleaf::core
