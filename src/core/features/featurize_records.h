// Records → the columns of a plan's inputs: the one featurizer of records (native, wasm, tests),
// following each input's "features" (input_features.h) on records as JSON text (records_json.h).
//
//   std::vector<InputColumns> columns = featurize_records(plan_json,
//       R"([{"sender_domain": "example.com", "subject_tokens": ["win", "now"], "length": 1200}])");
//   // one InputColumns per input with features, in the order of the inputs' names
//
// Per record and input, exactly:
//  - text: the field's string through hash_text_features (text_features.h): ids sorted, weights
//    the summed (signed) counts. A missing or null field is "" (no ids); any other non-string is
//    an error.
//  - column: each value text (categorical_texts in records_json.h: a string, true/false, an
//    integer; an array of them for a multi-valued field) → murmur3_32(text, seed) % hash_buckets.
//    A missing or null field, or an empty array, gives no ids.
//  - cross: every combination of the fields' values (each field scalar or array, taken in the
//    listed order), its texts joined with "\x1f" (the unit separator), hashed as a column. Any
//    field missing, null or an empty array gives no ids; more than 4096 combinations in one record
//    is an error naming the record and the field that passed the bound.
//  - column and cross ids are sorted and merged: an id's weight is how many values or
//    combinations hashed to it.
//  - numeric: per entry, the field's number, or `default` when the field is missing or null
//    (default 0); then the transform — log1p(max(x, 0)), or (x - mean) / std — then the clip;
//    computed in double, stored as float. Anything but a number (a string, a boolean, an array)
//    is an error; so is a result that overflows a 32-bit float.
// Sparse columns carry weights (always) and num_features = the input's buckets; dense columns
// have width = the number of entries. Errors are InvalidInput "records[i].<field>: <rule>".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/data/input_columns.h"
#include "core/features/input_features.h"

namespace fedleaf::core {

// Most combinations one record may make in a cross (the product of its fields' value counts).
inline constexpr std::size_t kMaxCrossCombinations = 4096;

std::vector<InputColumns> featurize_records(const std::vector<InputFeatures>& inputs,
                                            std::string_view records_json);
// parse_input_features(plan_json), then the above.
std::vector<InputColumns> featurize_records(const std::string& plan_json,
                                            std::string_view records_json);

}  // namespace fedleaf::core
