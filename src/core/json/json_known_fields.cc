#include "core/json/json_known_fields.h"

#include <algorithm>

#include "core/error.h"
#include "core/text/text_format.h"

namespace fedleaf::core {

void check_known_fields(const nlohmann::json& object, const std::string& path,
                        std::initializer_list<const char*> known) {
  for (const auto& item : object.items()) {
    if (std::any_of(known.begin(), known.end(), [&](const char* k) { return item.key() == k; })) {
      continue;
    }
    std::string listed;
    for (const char* k : known) listed += (listed.empty() ? "" : ", ") + std::string(k);
    throw InvalidInput(path + ": unknown field " + in_quotes(item.key()) + " (the fields are " +
                       listed + ")");
  }
}

}  // namespace fedleaf::core
