// Record featurization from its C++ entry point on any bytes as the records: either columns that
// keep their promises (one example per record in every input, ids below num_features, sorted and
// unique per example, positive weights, finite dense values) or fedleaf::InvalidInput — never
// another exception, a crash or a sanitizer report. The records come from pages and leaves'
// callers. The plan is fixed and reads every kind of feature, on fields the seed corpus and the
// dictionary use.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/features/featurize_records.h"

namespace {

const std::vector<fedleaf::core::InputFeatures>& features() {
  static const auto parsed =
      fedleaf::core::parse_input_features(std::string(R"({"model": {"inputs": {
    "body": {"type": "sparse_ids", "features": {"text": "body", "num_buckets": 4096, "ngrams": 2}},
    "sender": {"type": "sparse_ids", "features": {"column": "sender_domain", "hash_buckets": 64}},
    "tokens": {"type": "sparse_ids", "features": {"column": "subject_tokens", "hash_buckets": 512}},
    "cross": {"type": "sparse_ids",
              "features": {"cross": ["sender_domain", "subject_tokens", "html"], "hash_buckets": 8192}},
    "numeric": {"type": "dense", "dim": 3, "features": {"numeric": [
      {"field": "length", "transform": "log1p"},
      {"field": "links", "clip": [0, 10], "default": 1},
      {"field": "caps_share", "transform": {"standardize": {"mean": 0.1, "std": 0.05}}}]}}}}})"));
  return parsed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fedleaf::core;
  std::vector<InputColumns> columns;
  try {
    columns =
        featurize_records(features(), std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const fedleaf::InvalidInput&) {
    return 0;
  }
  if (columns.size() != features().size()) std::abort();
  std::size_t examples = 0;
  bool first = true;
  for (const InputColumns& c : columns) {
    std::size_t n = 0;
    if (c.kind == InputKind::kDense) {
      if (c.width == 0 || c.dense.size() % c.width != 0) std::abort();
      n = c.dense.size() / c.width;
      for (const float v : c.dense) {
        if (!std::isfinite(v)) std::abort();
      }
    } else {
      if (c.offsets.empty() || c.offsets.front() != 0 || c.offsets.back() != c.ids.size() ||
          c.weights.size() != c.ids.size()) {
        std::abort();
      }
      n = c.offsets.size() - 1;
      for (std::size_t e = 0; e < n; ++e) {
        if (c.offsets[e] > c.offsets[e + 1]) std::abort();
        for (std::uint32_t k = c.offsets[e]; k < c.offsets[e + 1]; ++k) {
          if (c.ids[k] >= c.num_features || c.weights[k] == 0.0f) std::abort();
          if (k > c.offsets[e] && c.ids[k] <= c.ids[k - 1]) std::abort();
        }
      }
    }
    if (!first && n != examples) std::abort();
    examples = n;
    first = false;
  }
  return 0;
}
