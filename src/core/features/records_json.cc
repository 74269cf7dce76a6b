#include "core/features/records_json.h"

#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "core/json/json_duplicate_keys.h"
#include "core/json/json_nesting.h"
#include "core/text/text_format.h"

namespace fedleaf::core {
namespace {

using json = nlohmann::json;
using Event = json::parse_event_t;

constexpr std::size_t kPlainNameMax = 64;
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53: JavaScript's exact integers
constexpr std::size_t kParserMessageMax = 200;  // a parser message quotes the token: a 10 MB one

const char* kFlat = "expected a string, number, boolean or array of them";

bool is_plain_name(std::string_view name) {
  if (name.empty() || name.size() > kPlainNameMax) return false;
  if (name[0] >= '0' && name[0] <= '9') return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '$';
    if (!ok) return false;
  }
  return true;
}

// Follows the parse to know which record and field it is in, and refuses what a flat record may
// not hold as soon as the parser meets it (so a nested document is never built). Depths are the
// parser callback's: the records array at 0, a record at 1, its keys and values at 2, the
// elements of an array value at 3.
class RecordsTracker {
 public:
  json::parser_callback_t callback() {
    return [this, dup = duplicates_.callback()](int depth, Event event, json& parsed) {
      dup(depth, event, parsed);
      if (duplicates_.found()) {
        refuse(record_ < 0 ? "records" : "records[" + std::to_string(record_) + "]",
               "the key " + duplicates_.describe() + " appears twice");
      }
      see(depth, event, parsed);
      return true;
    };
  }

  // Where the parse is: "records[3].length", "records[3]", or "records".
  std::string where() const {
    if (record_ < 0) return "records";
    if (!has_key_) return "records[" + std::to_string(record_) + "]";
    return record_field_path(static_cast<std::size_t>(record_), key_);
  }

 private:
  [[noreturn]] void refuse(const std::string& path, const std::string& rule) const {
    throw InvalidInput(path + ": " + rule);
  }

  void see(int depth, Event event, const json& parsed) {
    const bool opens = event == Event::object_start || event == Event::array_start;
    const bool element = opens || event == Event::value;
    if (depth == 0 && element && event != Event::array_start) {
      refuse("records", std::string("expected a JSON array of records (objects), got ") +
                            (event == Event::object_start ? "an object" : json_type_name(parsed)));
    }
    if (depth == 1 && element) {
      ++record_;
      has_key_ = false;
      if (event != Event::object_start) {
        refuse(where(), std::string("expected a record (an object), got ") +
                            (event == Event::array_start ? "an array" : json_type_name(parsed)));
      }
    }
    if (depth == 2) {
      if (event == Event::key) {
        key_ = parsed.get<std::string>();
        has_key_ = true;
      } else if (event == Event::object_start) {
        refuse(where(), std::string(kFlat) + ", got an object");
      } else if (event == Event::array_start) {
        element_ = 0;
      }
    }
    if (depth == 3 && element) {
      const std::string at = where() + "[" + std::to_string(element_++) + "]";
      if (opens) {
        refuse(at, std::string("expected a string, number or boolean (an array holds no ") +
                       (event == Event::object_start ? "object" : "array") + ")");
      }
      if (parsed.is_null()) refuse(at, "expected a string, number or boolean, got null");
    }
  }

  DuplicateKeys duplicates_;
  std::int64_t record_ = -1;
  bool has_key_ = false;
  std::string key_;
  std::size_t element_ = 0;
};

}  // namespace

const char* json_type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::null:
      return "null";
    default:
      return "a number";
  }
}

std::string record_field_path(std::size_t record, std::string_view field) {
  const std::string r = "records[" + std::to_string(record) + "]";
  if (is_plain_name(field)) return r + "." + std::string(field);
  if (field.size() <= kPlainNameMax) return r + "[" + in_quotes(field) + "]";
  return r + "[" + in_quotes(field.substr(0, kPlainNameMax)) + "...]";
}

json parse_records(std::string_view text) {
  check_json_nesting(text, kMaxJsonNesting, "records");
  RecordsTracker tracker;
  json records;
  try {
    records = json::parse(text.begin(), text.end(), tracker.callback());
  } catch (const json::out_of_range& e) {
    // The one out_of_range of the parser: a number beyond double (406, "number overflow").
    (void)e;
    throw InvalidInput(tracker.where() + ": not a finite number (beyond the range of a double)");
  } catch (const json::exception& e) {
    std::string what = e.what();
    if (what.size() > kParserMessageMax) what = what.substr(0, kParserMessageMax) + "...";
    throw InvalidInput("records: not valid JSON (" + what + "), in " + tracker.where());
  }
  if (!records.is_array()) {
    throw InvalidInput(std::string("records: expected a JSON array of records (objects), got ") +
                       json_type_name(records));
  }
  return records;
}

void categorical_texts(const json& value, const std::string& path, std::vector<std::string>& out) {
  // The path of an array's element is built only for its message.
  const auto at = [&](std::size_t index, bool element) {
    return element ? path + "[" + std::to_string(index) + "]" : path;
  };
  const auto one = [&](const json& v, std::size_t index, bool element) {
    if (v.is_string()) {
      out.push_back(v.get<std::string>());
    } else if (v.is_boolean()) {
      out.emplace_back(v.get<bool>() ? "true" : "false");
    } else if (v.is_number()) {
      // Exactly the integers JavaScript holds exactly, so a category reads the same from both.
      constexpr auto kMax = static_cast<std::uint64_t>(kMaxExactInteger);
      const double d = v.get<double>();
      const bool exact = v.is_number_unsigned() ? v.get<std::uint64_t>() <= kMax
                         : v.is_number_integer()
                             ? (v.get<std::int64_t>() >= -static_cast<std::int64_t>(kMax) &&
                                v.get<std::int64_t>() <= static_cast<std::int64_t>(kMax))
                             : std::fabs(d) <= kMaxExactInteger && std::floor(d) == d;
      if (!exact) {
        throw InvalidInput(at(index, element) +
                           ": a categorical number must be an integer in [-2^53, 2^53], got " +
                           (v.is_number_float() ? format_decimal(d) : v.dump()));
      }
      // 3.0 is 3, and -0 is 0, as JavaScript writes them.
      out.push_back(v.is_number_unsigned() ? std::to_string(v.get<std::uint64_t>())
                                           : std::to_string(static_cast<std::int64_t>(d)));
    } else {
      throw InvalidInput(at(index, element) + ": " + kFlat + ", got " + json_type_name(v));
    }
  };
  if (value.is_null()) return;
  if (!value.is_array()) return one(value, 0, false);
  out.reserve(out.size() + value.size());
  for (std::size_t i = 0; i < value.size(); ++i) one(value[i], i, true);
}

}  // namespace fedleaf::core
