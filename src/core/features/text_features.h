// Raw texts → hashed bag-of-words CSR dataset: the tokenizer and the feature hashing that every
// fedleaf component (leaf in wasm, server, tests) shares. Texts from JS reach it as records of one
// field "text" (a text plan's input, input_features.h) through featurize_records, which hashes
// each with hash_text_features; build_hashed_text_dataset is the native path over texts back to
// back (the SpamAssassin fixture, the train bench), giving the same dataset
// (tests/core/train/text_records_test.cc).
//
//   TextFeatureOptions opt;                   // or text_features_from_plan(plan_json)
//   std::string texts = "Buy NOW!!" "hello world";
//   std::vector<std::uint32_t> offsets{0, 9, 20};       // byte offsets, num_texts + 1
//   std::vector<std::int32_t> labels{1, 0};
//   Dataset d = build_hashed_text_dataset(texts.data(), texts.size(), offsets.data(), 2,
//                                         labels.data(), opt);
//
// Tokenizer, exactly (bytes, not code points):
//  1. If skip_headers, everything up to and including the first empty line ("\n\n" or
//     "\n\r\n") is dropped; a text without an empty line is kept whole.
//  2. Token bytes are ASCII letters and digits and every byte >= 0x80 (so UTF-8 sequences stay
//     inside tokens); every other byte separates tokens.
//  3. If lowercase, ASCII A-Z become a-z (other bytes are unchanged).
//  4. Tokens shorter than min_token_length or longer than max_token_length bytes are dropped
//     (not truncated). N-grams are built from the tokens that remain.
// Features, exactly:
//  - For n = 1..ngrams, every run of n consecutive kept tokens joined by one space (" ") is a
//    feature string s; h = murmur3_32(s, seed) (see murmur3.h); its id is h % num_buckets.
//  - Its weight is +1, or with signed_hash -1 when bit 31 of h is set.
//  - Weights of equal ids in one text are summed; ids whose sum is 0 are dropped; with binary,
//    each remaining weight is replaced by its sign. Each example's ids are sorted ascending.
// The dataset's num_features is num_buckets.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/data/dataset.h"

namespace fedleaf::core {

// The fields of a plan's "features" (and, with "text", of a text input's) and the hashes it
// names: what parse_text_feature_options checks, and what the plan's schema lists.
inline constexpr std::array kTextFeatureFields{
    "hash",   "num_buckets",  "ngrams",           "signed",           "lowercase",
    "binary", "skip_headers", "min_token_length", "max_token_length", "seed"};
inline constexpr std::array kTextHashes{"murmur3_32"};

struct TextFeatureOptions {
  std::uint32_t num_buckets = 1u << 18;
  std::uint32_t ngrams = 1;  // 1: unigrams; 2: unigrams and bigrams; ...
  bool signed_hash = false;
  bool lowercase = true;
  bool binary = false;
  bool skip_headers = false;
  std::uint32_t min_token_length = 2;
  std::uint32_t max_token_length = 30;
  std::uint32_t seed = 0;
};

// The options from a JSON object of the fields below (absent ones keep the defaults above):
//   {"hash": "murmur3_32", "num_buckets": 1..2^31-1, "ngrams": 1..8, "signed": bool,
//    "lowercase": bool, "binary": bool, "skip_headers": bool, "min_token_length": N >= 1,
//    "max_token_length": N >= min_token_length, "seed": N}
// `path` names the object in errors ("plan.features", "plan.model.inputs.body.features"):
// InvalidInput "<path>.ngrams: expected an integer in [1, 8]". An unknown field is an error
// naming it; a caller whose object holds fields of its own as well (a records text spec's "text")
// passes check_fields = false and checks the whole list itself.
TextFeatureOptions parse_text_feature_options(const nlohmann::json& object, const std::string& path,
                                              bool check_fields = true);

// Throws InvalidInput naming the field when num_buckets or ngrams is 0, or min_token_length is 0
// or above max_token_length.
void validate(const TextFeatureOptions& options);

// The kept tokens of `text` (steps 1-4 above), for tests and for inspection.
std::vector<std::string> tokenize(std::string_view text, const TextFeatureOptions& options);

// The (id, weight) pairs of one text, sorted by id: one row of build_hashed_text_dataset.
void hash_text_features(std::string_view text, const TextFeatureOptions& options,
                        std::vector<std::uint32_t>& ids, std::vector<float>& weights);

// `texts` holds num_texts texts back to back; text i is bytes [offsets[i], offsets[i+1]).
// `labels` has num_texts entries. Throws InvalidInput when the offsets are not non-decreasing
// within [0, texts_size], a label is negative, or the options are invalid.
Dataset build_hashed_text_dataset(const char* texts, std::size_t texts_size,
                                  const std::uint32_t* offsets, std::size_t num_texts,
                                  const std::int32_t* labels, const TextFeatureOptions& options);

}  // namespace fedleaf::core
