// Records from outside as JSON text: the one reader of their rules, and the readers of one field's
// value as each kind of feature takes it. The text is untrusted (a page's records, a fuzzer).
//
//   const nlohmann::json records = parse_records(text);     // or InvalidInput
//   const nlohmann::json* v = record_field(records[i], "sender_domain");
//
// The records, exactly:
//  - the text passes the repository's JSON checks (json_nesting.h, json_duplicate_keys.h: a key
//    twice in one record is an error naming it);
//  - a JSON array of objects (records); each record is flat: every value is a string, a number,
//    true/false, null, or an array of strings, numbers and booleans. A nested object, an array
//    inside an array, or null inside an array is an error naming the record and the field:
//      "records[17].sender_domain: expected a string, number, boolean or array of them, got an
//       object"
//  - numbers are finite (1e999 overflows the parser: "records[3].length: not a finite number");
//  - field names are any string ("__proto__", "" and 10 MB names are plain names); a message
//    names a field as records[i].name when the name is short and plain, else records[i]['...']
//    quoted and cut to 64 bytes.
// Nothing is quadratic in the number of records, of fields in a record or of bytes in a value.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace fedleaf::core {

nlohmann::json parse_records(std::string_view text);

// The value of `field` in `record` (an object of parse_records), nullptr when it is absent.
inline const nlohmann::json* record_field(const nlohmann::json& record, const std::string& field) {
  const auto it = record.find(field);
  return it == record.end() ? nullptr : &*it;
}

// "records[3].length" or "records[3]['a b']", as the header says.
std::string record_field_path(std::size_t record, std::string_view field);

// What a message calls a value's JSON type: "an object", "an array", "a string", "a number",
// "a boolean", "null".
const char* json_type_name(const nlohmann::json& value);

// A categorical value's texts, appended to `out`: a string as is, true/false as "true"/"false",
// a number with an integral value in [-2^53, 2^53] in decimal as JavaScript writes it (3.0 is
// "3", -0 is "0"); an array: each element's text. Null gives none. Other numbers (1.5, 1e300,
// 2^53 + 1) are an error at `path`: a category's text must not depend on how a number is printed
// or on which side read it.
void categorical_texts(const nlohmann::json& value, const std::string& path,
                       std::vector<std::string>& out);

}  // namespace fedleaf::core
