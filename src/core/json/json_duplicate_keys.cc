#include "core/json/json_duplicate_keys.h"

#include "core/text/text_format.h"

namespace fedleaf::core {

nlohmann::json::parser_callback_t DuplicateKeys::callback() {
  return [this](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) {
      open_.emplace_back();
    } else if (event == Event::object_end && !open_.empty()) {
      open_.pop_back();
    } else if (event == Event::key && !open_.empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      OpenObject& object = open_.back();
      if (!object.keys.insert(key).second && !found_) {
        found_ = true;
        key_ = key;
        parent_key_ = open_.size() > 1 ? open_[open_.size() - 2].last_key : std::string();
      }
      object.last_key = key;
    }
    return true;
  };
}

std::string DuplicateKeys::describe() const {
  return parent_key_.empty() ? in_quotes(key_)
                             : in_quotes(key_) + " (in " + in_quotes(parent_key_) + ")";
}

}  // namespace fedleaf::core
