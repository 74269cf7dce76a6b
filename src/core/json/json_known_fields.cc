#include "core/json/json_known_fields.h"

#include <algorithm>

#include "core/error.h"
#include "core/text/text_format.h"

namespace fedleaf::core {

void check_known_fields(const nlohmann::json& object, const std::string& path,
                        std::initializer_list<const char*> known) {
  check_known_fields(object, path, std::vector<std::string>(known.begin(), known.end()));
}

void check_known_fields(const nlohmann::json& object, const std::string& path,
                        const std::vector<std::string>& known) {
  for (const auto& item : object.items()) {
    if (std::find(known.begin(), known.end(), item.key()) != known.end()) continue;
    std::string listed;
    for (const std::string& k : known) listed += (listed.empty() ? "" : ", ") + k;
    throw InvalidInput(path + ": unknown field " + in_quotes(item.key()) + " (the fields are " +
                       listed + ")");
  }
}

}  // namespace fedleaf::core
