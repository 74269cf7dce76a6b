// The tokenizer and feature hashing on any bytes and any valid options: never a crash or a
// sanitizer report, every id below num_buckets, ids sorted and unique, weights nonzero. The
// first four bytes pick the options.
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "core/features/text_features.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  fedleaf::core::TextFeatureOptions options;
  options.num_buckets = 1u + data[0] * 97u;
  options.ngrams = 1u + (data[1] & 3);
  options.signed_hash = data[1] & 4;
  options.lowercase = data[1] & 8;
  options.binary = data[1] & 16;
  options.skip_headers = data[1] & 32;
  options.min_token_length = 1u + (data[2] & 7);
  options.max_token_length = options.min_token_length + data[3];
  const std::string_view text(reinterpret_cast<const char*>(data + 4), size - 4);
  std::vector<std::uint32_t> ids;
  std::vector<float> weights;
  fedleaf::core::hash_text_features(text, options, ids, weights);
  if (ids.size() != weights.size()) std::abort();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= options.num_buckets || weights[i] == 0.0f) std::abort();
    if (i > 0 && ids[i] <= ids[i - 1]) std::abort();
  }
  return 0;
}
