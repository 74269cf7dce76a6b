// How a plan's inputs are computed from records: the `"features"` object of each input in
// `model.inputs` (issue 29), parsed once. featurize_records (featurize_records.h) applies it.
//
//   "model": {"inputs": {
//     "body":    {"type": "sparse_ids", "features": {"text": "body", "num_buckets": 262144}},
//     "sender":  {"type": "sparse_ids", "features": {"column": "sender_domain", "hash_buckets":
//     4096}}, "cross":   {"type": "sparse_ids",
//                 "features": {"cross": ["sender_domain", "subject_tokens"], "hash_buckets":
//                 4194304}},
//     "numeric": {"type": "dense", "dim": 2, "features": {"numeric": [
//         {"field": "length", "transform": "log1p"},
//         {"field": "caps_share", "transform": {"standardize": {"mean": 0.1, "std": 0.05}},
//          "clip": [-5, 5], "default": 0}]}}}}
//
// A features object has exactly one of these kinds (the other fields belong to that kind):
//  - "text": FIELD — the field's string through the text featurizer (text_features.h); every
//    TextFeatureOptions field ("num_buckets", "ngrams", "lowercase", ...) with the same names and
//    defaults as the plan's top-level "features". A sparse_ids input.
//  - "column": FIELD, "hash_buckets": 1..2^31-1 (required), "seed": N (default 0) — categorical:
//    each value's text → id murmur3_32(text, seed) % hash_buckets. A sparse_ids input.
//  - "cross": [FIELD, FIELD, ...] (2 to 8 distinct fields), "hash_buckets", "seed" as for
//    column — every combination of the fields' values, their texts joined with "\x1f", hashed as
//    for a column. A sparse_ids input.
//  - "numeric": [ENTRY, ...] — a dense input with "dim" equal to the number of entries; ENTRY is
//    {"field": FIELD, "transform": "none" (default) | "log1p" | {"standardize": {"mean": M,
//     "std": S > 0}}, "clip": [LO, HI] (optional, LO <= HI), "default": D (default 0)}.
// FIELD is a record field's name: 1 to 256 bytes. Numbers in the spec are finite.
// Every error is InvalidInput "<path>: <rule>", the path in the plan's own syntax:
//   "plan.model.inputs.sender.features.hash_buckets: missing",
//   "plan.model.inputs.numeric.features.numeric: 3 entries for an input of dim 2 (one entry per
//    unit)".
// An input without "features" is left out (its data comes from elsewhere), but for one case: a
// one-input text plan — its only input sparse_ids without "features", and the plan's top-level
// "features" given (scripts/demo/spam_plan.json) — is rewritten here, at parse time, into a
// records plan whose input reads the record field "text" through the text featurizer with those
// options (text_input_features). So texts are records [{"text": ...}] on the one records path.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/data/input_columns.h"
#include "core/features/text_features.h"

namespace fedleaf::core {

enum class FeatureKind { kText, kColumn, kCross, kNumeric };
enum class NumericTransform { kNone, kLog1p, kStandardize };

// The fields of an input's "features", one list per kind (the kind is the one of "text",
// "column", "cross", "numeric" given), of a numeric entry and its transform, and the named
// transforms: what parse_input_features checks, and what the plan's schema lists.
inline constexpr std::array kTextInputFields{
    "text",   "hash",         "num_buckets",      "ngrams",           "signed", "lowercase",
    "binary", "skip_headers", "min_token_length", "max_token_length", "seed"};
inline constexpr std::array kColumnInputFields{"column", "hash_buckets", "seed"};
inline constexpr std::array kCrossInputFields{"cross", "hash_buckets", "seed"};
inline constexpr std::array kNumericInputFields{"numeric"};
inline constexpr std::array kNumericEntryFields{"field", "transform", "clip", "default"};
inline constexpr std::array kNumericTransformFields{"standardize"};
inline constexpr std::array kStandardizeFields{"mean", "std"};
inline constexpr std::array kNumericTransforms{std::pair{"none", NumericTransform::kNone},
                                               std::pair{"log1p", NumericTransform::kLog1p}};

struct NumericFeature {
  std::string field;
  NumericTransform transform = NumericTransform::kNone;
  double mean = 0.0;  // standardize: (x - mean) / std
  double std = 1.0;
  bool clip = false;  // then clamp to [lo, hi]
  double lo = 0.0;
  double hi = 0.0;
  double fallback = 0.0;  // "default": the value of a missing or null field, before the transform
};

struct InputFeatures {
  std::string input;  // the plan input these features compute
  std::string path;   // "plan.model.inputs.<input>.features", for errors
  FeatureKind kind = FeatureKind::kText;
  std::vector<std::string> fields;  // text, column: one field; cross: two or more
  TextFeatureOptions text;          // text
  std::uint32_t hash_buckets = 0;   // column, cross
  std::uint32_t seed = 0;           // column, cross (text: text.seed)
  std::vector<NumericFeature> numeric;

  InputKind input_kind() const {
    return kind == FeatureKind::kNumeric ? InputKind::kDense : InputKind::kSparseIds;
  }
  // Ids are below this (sparse: num_buckets or hash_buckets); the width of a dense input.
  std::uint32_t num_features() const;
};

// The record field a text plan's input reads (see above).
inline constexpr const char* kTextRecordField = "text";

// The features of a text plan's input: kTextRecordField through the text featurizer with
// `options`, path "plan.features". Its input is unnamed (""), as a dataset of texts has always
// been: it feeds a one-input plan's only input whatever its name (dataset.h), so one dataset of
// texts serves every text plan of the same options.
InputFeatures text_input_features(const TextFeatureOptions& options);

// The features of every input of the plan that has them, in the order of the inputs' names (a
// one-input text plan: its text input, rewritten as above).
// The plan text passes the repository's JSON checks first (nesting, duplicate keys: plan_json.h).
std::vector<InputFeatures> parse_input_features(const std::string& plan_json);
// The same on a parsed plan (parse_plan calls this one).
std::vector<InputFeatures> parse_input_features(const nlohmann::json& plan);

// The rules parse_input_features enforces, on a value built by hand (featurize_records checks
// every input with it before reading a record): the field count of the kind, hash_buckets >= 1,
// valid text options, numeric entries present with std > 0 and lo <= hi. InvalidInput naming
// features.path.
void validate(const InputFeatures& features);

// Plan validation: the ids of `features` must fit a table of `vocab` rows that its input feeds
// (every table, when an input feeds several). InvalidInput
//   "plan.model.inputs.sender.features.hash_buckets: 8192 buckets exceed the vocab 4096 of table
//    'sender_emb/weight' (an id would fall outside the table)".
// Nothing to check for a numeric input.
void check_buckets_fit_vocab(const InputFeatures& features, std::uint64_t vocab,
                             const std::string& table);

}  // namespace fedleaf::core
