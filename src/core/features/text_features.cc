#include "core/features/text_features.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "core/features/murmur3.h"
#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"

namespace fedleaf::core {
namespace {

bool is_token_byte(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

std::string_view body_of(std::string_view text, bool skip_headers) {
  if (!skip_headers) return text;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') continue;
    if (i + 1 < text.size() && text[i + 1] == '\n') return text.substr(i + 2);
    if (i + 2 < text.size() && text[i + 1] == '\r' && text[i + 2] == '\n') {
      return text.substr(i + 3);
    }
  }
  return text;
}

// Calls fn(token) for every kept token; `scratch` holds the lowercased token.
template <class Fn>
void for_each_token(std::string_view text, const TextFeatureOptions& options, std::string& scratch,
                    Fn&& fn) {
  text = body_of(text, options.skip_headers);
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && !is_token_byte(static_cast<unsigned char>(text[i]))) ++i;
    std::size_t j = i;
    while (j < text.size() && is_token_byte(static_cast<unsigned char>(text[j]))) ++j;
    const std::size_t length = j - i;
    if (length >= options.min_token_length && length <= options.max_token_length) {
      scratch.assign(text.data() + i, length);
      if (options.lowercase) {
        for (char& c : scratch) {
          if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        }
      }
      fn(std::string_view(scratch));
    }
    i = j;
  }
}

// Reused buffers of one featurization run.
struct HashScratch {
  std::string token;
  std::vector<std::string> recent;  // the last ngrams - 1 tokens, oldest first
  std::string gram;
  std::vector<std::pair<std::uint32_t, float>> pairs;
};

void hash_one_text(std::string_view text, const TextFeatureOptions& options, HashScratch& s,
                   std::vector<std::uint32_t>& ids, std::vector<float>& weights) {
  s.pairs.clear();
  s.recent.clear();
  const auto add = [&](std::string_view feature) {
    const std::uint32_t h = murmur3_32(feature, options.seed);
    const float w = (options.signed_hash && (h & 0x80000000u)) ? -1.0f : 1.0f;
    s.pairs.emplace_back(h % options.num_buckets, w);
  };
  for_each_token(text, options, s.token, [&](std::string_view token) {
    add(token);
    // n-grams ending at this token: recent[k..] + token, longest last.
    for (std::size_t n = 2; n <= options.ngrams && n - 1 <= s.recent.size(); ++n) {
      s.gram.clear();
      for (std::size_t k = s.recent.size() - (n - 1); k < s.recent.size(); ++k) {
        s.gram += s.recent[k];
        s.gram += ' ';
      }
      s.gram += token;
      add(s.gram);
    }
    if (options.ngrams > 1) {
      if (s.recent.size() == options.ngrams - 1) s.recent.erase(s.recent.begin());
      s.recent.emplace_back(token);
    }
  });
  std::sort(s.pairs.begin(), s.pairs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::size_t i = 0;
  while (i < s.pairs.size()) {
    const std::uint32_t id = s.pairs[i].first;
    float sum = 0.0f;
    for (; i < s.pairs.size() && s.pairs[i].first == id; ++i) sum += s.pairs[i].second;
    if (sum == 0.0f) continue;
    ids.push_back(id);
    weights.push_back(options.binary ? (sum > 0.0f ? 1.0f : -1.0f) : sum);
  }
}

}  // namespace

void validate(const TextFeatureOptions& options) {
  if (options.num_buckets == 0) throw InvalidInput("features.num_buckets: must be > 0");
  if (options.ngrams == 0) throw InvalidInput("features.ngrams: must be >= 1");
  if (options.min_token_length == 0) {
    throw InvalidInput("features.min_token_length: must be >= 1");
  }
  if (options.min_token_length > options.max_token_length) {
    throw InvalidInput("features.max_token_length: must be >= min_token_length");
  }
}

TextFeatureOptions parse_text_feature_options(const nlohmann::json& f, const std::string& path,
                                              bool check_fields) {
  using namespace plan_json;
  if (check_fields) {
    check_known_fields(f, path, kTextFeatureFields);
  }
  TextFeatureOptions o;
  const std::string hash = get_string(f, path, "hash", "murmur3_32");
  if (!is_known_field(hash, kTextHashes))
    fail(path + ".hash", "unknown hash '" + hash + "' (expected murmur3_32)");
  o.num_buckets = static_cast<std::uint32_t>(
      get_integer(f, path, "num_buckets", o.num_buckets, 1, 0x7fffffffull));
  o.ngrams = static_cast<std::uint32_t>(get_integer(f, path, "ngrams", o.ngrams, 1, 8));
  o.signed_hash = get_bool(f, path, "signed", o.signed_hash);
  o.lowercase = get_bool(f, path, "lowercase", o.lowercase);
  o.binary = get_bool(f, path, "binary", o.binary);
  o.skip_headers = get_bool(f, path, "skip_headers", o.skip_headers);
  o.min_token_length =
      static_cast<std::uint32_t>(get_integer(f, path, "min_token_length", o.min_token_length, 1));
  o.max_token_length =
      static_cast<std::uint32_t>(get_integer(f, path, "max_token_length", o.max_token_length, 1));
  o.seed = static_cast<std::uint32_t>(get_integer(f, path, "seed", o.seed, 0));
  if (o.min_token_length > o.max_token_length) {
    fail(path + ".max_token_length", "must be >= min_token_length");
  }
  return o;
}

std::vector<std::string> tokenize(std::string_view text, const TextFeatureOptions& options) {
  validate(options);
  std::vector<std::string> tokens;
  std::string scratch;
  for_each_token(text, options, scratch,
                 [&](std::string_view token) { tokens.emplace_back(token); });
  return tokens;
}

void hash_text_features(std::string_view text, const TextFeatureOptions& options,
                        std::vector<std::uint32_t>& ids, std::vector<float>& weights) {
  validate(options);
  ids.clear();
  weights.clear();
  HashScratch scratch;
  hash_one_text(text, options, scratch, ids, weights);
}

Dataset build_hashed_text_dataset(const char* texts, std::size_t texts_size,
                                  const std::uint32_t* offsets, std::size_t num_texts,
                                  const std::int32_t* labels, const TextFeatureOptions& options) {
  validate(options);
  if (num_texts > 0 && (offsets == nullptr || labels == nullptr)) {
    throw InvalidInput("text dataset: offsets and labels are required");
  }
  std::vector<std::uint32_t> csr_offsets{0};
  csr_offsets.reserve(num_texts + 1);
  std::vector<std::uint32_t> ids;
  std::vector<float> weights;
  HashScratch scratch;
  for (std::size_t i = 0; i < num_texts; ++i) {
    const std::uint32_t begin = offsets[i];
    const std::uint32_t end = offsets[i + 1];
    if (begin > end || end > texts_size) {
      throw InvalidInput("text dataset: text " + std::to_string(i) + " spans bytes [" +
                         std::to_string(begin) + ", " + std::to_string(end) +
                         "), outside the buffer of " + std::to_string(texts_size) +
                         " bytes or reversed");
    }
    hash_one_text(std::string_view(texts + begin, end - begin), options, scratch, ids, weights);
    if (ids.size() >= 0xffffffffull) throw InvalidInput("text dataset: more than 2^32 - 1 ids");
    csr_offsets.push_back(static_cast<std::uint32_t>(ids.size()));
  }
  std::vector<std::int32_t> label_vector(labels, labels + num_texts);
  return Dataset::from_csr(std::move(csr_offsets), std::move(ids), std::move(weights),
                           std::move(label_vector), options.num_buckets);
}

}  // namespace fedleaf::core
