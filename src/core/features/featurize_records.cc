#include "core/features/featurize_records.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/features/murmur3.h"
#include "core/features/records_json.h"
#include "core/text/text_format.h"

namespace fedleaf::core {
namespace {

using json = nlohmann::json;

// Bytes one record's cross may hash: each combination hashes its joined texts anew, so a 10 MB
// value crossed with 4096 others would hash 40 GB.
constexpr std::uint64_t kMaxCrossBytes = 1ull << 26;

// Buffers reused across records, so a record costs no allocation once they have grown.
struct Scratch {
  std::vector<std::uint32_t> hashed;  // column/cross ids of one record, before merging
  std::vector<std::uint32_t> ids;     // text ids of one record
  std::vector<float> weights;
  std::vector<std::vector<std::string>> values;  // cross: each field's value texts
  std::vector<std::size_t> odometer;
  std::string joined;
};

void close_example(InputColumns& col, std::size_t record) {
  if (col.ids.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidInput("records[" + std::to_string(record) + "]: the records make more than " +
                       "2^32 - 1 ids for input " + in_quotes(col.name));
  }
  col.offsets.push_back(static_cast<std::uint32_t>(col.ids.size()));
}

// Sorts `hashed` and appends each distinct id with its count as the weight.
void append_counted(std::vector<std::uint32_t>& hashed, InputColumns& col) {
  std::sort(hashed.begin(), hashed.end());
  for (std::size_t i = 0; i < hashed.size();) {
    std::size_t j = i;
    while (j < hashed.size() && hashed[j] == hashed[i]) ++j;
    col.ids.push_back(hashed[i]);
    col.weights.push_back(static_cast<float>(j - i));
    i = j;
  }
}

void featurize_text(const InputFeatures& f, const json& record, std::size_t r, InputColumns& col,
                    Scratch& s) {
  const json* v = record_field(record, f.fields[0]);
  if (v == nullptr || v->is_null()) return;
  if (!v->is_string()) {
    throw InvalidInput(record_field_path(r, f.fields[0]) + ": expected a string (or null), got " +
                       json_type_name(*v));
  }
  hash_text_features(v->get_ref<const std::string&>(), f.text, s.ids, s.weights);
  col.ids.insert(col.ids.end(), s.ids.begin(), s.ids.end());
  col.weights.insert(col.weights.end(), s.weights.begin(), s.weights.end());
}

void featurize_column(const InputFeatures& f, const json& record, std::size_t r, InputColumns& col,
                      Scratch& s) {
  const json* v = record_field(record, f.fields[0]);
  if (v == nullptr) return;
  s.values.resize(1);
  s.values[0].clear();
  categorical_texts(*v, record_field_path(r, f.fields[0]), s.values[0]);
  s.hashed.clear();
  for (const std::string& text : s.values[0]) {
    s.hashed.push_back(murmur3_32(text, f.seed) % f.hash_buckets);
  }
  append_counted(s.hashed, col);
}

std::string cross_name(const InputFeatures& f) {
  std::string out;
  for (const std::string& field : f.fields) out += (out.empty() ? "" : " x ") + in_quotes(field);
  return out;
}

void featurize_cross(const InputFeatures& f, const json& record, std::size_t r, InputColumns& col,
                     Scratch& s) {
  const std::size_t n = f.fields.size();
  s.values.resize(n);
  bool empty = false;
  for (std::size_t k = 0; k < n; ++k) {
    s.values[k].clear();
    const json* v = record_field(record, f.fields[k]);
    if (v != nullptr) categorical_texts(*v, record_field_path(r, f.fields[k]), s.values[k]);
    empty = empty || s.values[k].empty();
  }
  if (empty) return;  // any field missing, null or [] → no combination
  // The bounds before any hashing: combinations, and bytes hashed (each combination hashes every
  // field's text once, so field k's total bytes are hashed product / count_k times).
  std::uint64_t combinations = 1;
  for (std::size_t k = 0; k < n; ++k) {
    combinations *= s.values[k].size();
    if (combinations > kMaxCrossCombinations) {
      throw InvalidInput(record_field_path(r, f.fields[k]) + ": the cross " + cross_name(f) +
                         " makes more than " + std::to_string(kMaxCrossCombinations) +
                         " combinations in this record");
    }
  }
  std::uint64_t bytes = 0;
  for (std::size_t k = 0; k < n; ++k) {
    std::uint64_t field_bytes = 0;
    for (const std::string& text : s.values[k]) field_bytes += text.size() + 1;
    bytes += field_bytes * (combinations / s.values[k].size());
    if (bytes > kMaxCrossBytes) {
      throw InvalidInput(record_field_path(r, f.fields[k]) + ": the cross " + cross_name(f) +
                         " would hash more than " + std::to_string(kMaxCrossBytes) +
                         " bytes in this record (values too long to cross)");
    }
  }
  s.odometer.assign(n, 0);
  s.hashed.clear();
  for (std::uint64_t c = 0; c < combinations; ++c) {
    s.joined.clear();
    for (std::size_t k = 0; k < n; ++k) {
      if (k > 0) s.joined += '\x1f';
      s.joined += s.values[k][s.odometer[k]];
    }
    s.hashed.push_back(murmur3_32(s.joined, f.seed) % f.hash_buckets);
    // The last field turns fastest: combinations in the order of the listed fields.
    for (std::size_t k = n; k-- > 0;) {
      if (++s.odometer[k] < s.values[k].size()) break;
      s.odometer[k] = 0;
    }
  }
  append_counted(s.hashed, col);
}

double apply_numeric(const NumericFeature& e, double x) {
  switch (e.transform) {
    case NumericTransform::kNone:
      break;
    case NumericTransform::kLog1p:
      x = std::log1p(std::max(x, 0.0));
      break;
    case NumericTransform::kStandardize:
      x = (x - e.mean) / e.std;
      break;
  }
  if (e.clip) x = std::min(std::max(x, e.lo), e.hi);
  return x;
}

void featurize_numeric(const InputFeatures& f, const json& record, std::size_t r,
                       InputColumns& col) {
  for (const NumericFeature& e : f.numeric) {
    const json* v = record_field(record, e.field);
    double x = e.fallback;
    if (v != nullptr && !v->is_null()) {
      if (!v->is_number()) {
        throw InvalidInput(record_field_path(r, e.field) + ": expected a number (or null), got " +
                           json_type_name(*v));
      }
      x = v->get<double>();
    }
    const auto value = static_cast<float>(apply_numeric(e, x));
    if (!std::isfinite(value)) {
      throw InvalidInput(record_field_path(r, e.field) + ": " + format_decimal(x) +
                         " is beyond a 32-bit float after the transform");
    }
    col.dense.push_back(value);
  }
}

}  // namespace

std::vector<InputColumns> featurize_records(const std::vector<InputFeatures>& inputs,
                                            std::string_view records_json) {
  const json records = parse_records(records_json);
  std::vector<InputColumns> out;
  out.reserve(inputs.size());
  for (const InputFeatures& f : inputs) {
    validate(f);
    InputColumns col;
    col.name = f.input;
    col.kind = f.input_kind();
    if (col.kind == InputKind::kDense) {
      col.width = f.numeric.size();
      col.dense.reserve(records.size() * col.width);
    } else {
      col.num_features = f.num_features();
      col.offsets.reserve(records.size() + 1);
    }
    out.push_back(std::move(col));
  }
  Scratch scratch;
  for (std::size_t r = 0; r < records.size(); ++r) {
    const json& record = records[r];
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const InputFeatures& f = inputs[k];
      InputColumns& col = out[k];
      switch (f.kind) {
        case FeatureKind::kText:
          featurize_text(f, record, r, col, scratch);
          break;
        case FeatureKind::kColumn:
          featurize_column(f, record, r, col, scratch);
          break;
        case FeatureKind::kCross:
          featurize_cross(f, record, r, col, scratch);
          break;
        case FeatureKind::kNumeric:
          featurize_numeric(f, record, r, col);
          continue;
      }
      close_example(col, r);
    }
  }
  return out;
}

std::vector<InputColumns> featurize_records(const std::string& plan_json,
                                            std::string_view records_json) {
  return featurize_records(parse_input_features(plan_json), records_json);
}

}  // namespace fedleaf::core
