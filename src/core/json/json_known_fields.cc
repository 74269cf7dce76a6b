#include "core/json/json_known_fields.h"

#include <algorithm>

#include "core/error.h"
#include "core/text/text_format.h"

namespace fedleaf::core {

namespace {

template <class Names>
void check_fields(const nlohmann::json& object, const std::string& path, const Names& known) {
  for (const auto& item : object.items()) {
    if (std::any_of(known.begin(), known.end(), [&](const auto& k) { return item.key() == k; })) {
      continue;
    }
    std::string listed;
    for (const auto& k : known) listed += (listed.empty() ? "" : ", ") + std::string(k);
    throw InvalidInput(path + ": unknown field " + in_quotes(item.key()) + " (the fields are " +
                       listed + ")");
  }
}

}  // namespace

bool is_known_field(const std::string& key, FieldList known) {
  return std::any_of(known.begin(), known.end(), [&](const char* k) { return key == k; });
}

void check_known_fields(const nlohmann::json& object, const std::string& path, FieldList known) {
  check_fields(object, path, known);
}

void check_known_fields(const nlohmann::json& object, const std::string& path,
                        const std::vector<std::string>& known) {
  check_fields(object, path, known);
}

}  // namespace fedleaf::core
