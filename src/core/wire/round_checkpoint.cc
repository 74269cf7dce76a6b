#include "core/wire/round_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "core/error.h"
#include "core/text/text_format.h"
#include "core/wire/safetensors.h"
#include "core/wire/safetensors_index.h"

namespace fedleaf::core {
namespace {

constexpr std::uint64_t kMaxExactWeight = std::uint64_t{1} << 53;
const std::string kWhere = "round checkpoint";

// A decimal integer in [1, 2^53] (so it is exact as a double weight).
std::uint64_t parse_positive_integer(const std::string& text, const std::string& what) {
  const bool digits =
      !text.empty() && text.size() <= 16 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const std::uint64_t value = digits ? std::stoull(text) : 0;
  if (!digits || value == 0 || value > kMaxExactWeight) {
    throw InvalidInput(what + " " + in_quotes(text) + " must be an integer in [1, 2^53]");
  }
  return value;
}

std::uint64_t parse_report_count(const std::string& text, const std::string& what) {
  if (text == "0") return 0;
  return parse_positive_integer(text, what);
}

double parse_weight_total(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0.0) {
    throw InvalidInput(what + " " + in_quotes(text) + " must be a finite number >= 0");
  }
  return v;
}

std::string join_claims(const std::vector<std::uint64_t>& claims) {
  std::string out;
  for (std::uint64_t c : claims) {
    if (!out.empty()) out += ',';
    out += std::to_string(c);
  }
  return out;
}

std::vector<std::uint64_t> parse_claims(const std::string& text, const std::string& what) {
  std::vector<std::uint64_t> claims;
  if (text.empty()) return claims;
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    const std::size_t length = comma == std::string::npos ? std::string::npos : comma - start;
    claims.push_back(parse_positive_integer(text.substr(start, length), what));
    if (comma == std::string::npos) return claims;
    start = comma + 1;
  }
}

const std::string& metadata_value(const Metadata& metadata, const std::string& key) {
  const auto it = metadata.find(key);
  if (it == metadata.end())
    throw InvalidInput(kWhere + ": metadata " + in_quotes(key) + " is missing");
  return it->second;
}

}  // namespace

std::vector<std::uint8_t> write_round_checkpoint(const RoundCheckpoint& checkpoint) {
  Metadata metadata = checkpoint.metadata;
  metadata["format"] = kRoundCheckpointFormat;
  metadata["num_reports"] = std::to_string(checkpoint.num_reports);
  metadata["total_weight"] = format_double_exact(checkpoint.total_weight);
  metadata["num_capped"] = std::to_string(checkpoint.num_capped);
  if (checkpoint.claims) metadata["claims"] = join_claims(*checkpoint.claims);
  return write_safetensors(checkpoint.arrays, metadata);
}

RoundCheckpoint read_round_checkpoint(const std::uint8_t* data, std::size_t size) {
  SafetensorsReadOptions options;
  options.require_finite = true;
  SafetensorsFile file = read_safetensors(data, size, options);
  RoundCheckpoint out;
  const std::string& format = metadata_value(file.metadata, "format");
  out.v1 = format == kRoundCheckpointFormatV1;
  if (format != kRoundCheckpointFormat && !out.v1) {
    throw InvalidInput(kWhere + ": format " + in_quotes(format) + " is not " +
                       in_quotes(kRoundCheckpointFormat) + " (nor the older " +
                       in_quotes(kRoundCheckpointFormatV1) + ")");
  }
  out.num_reports =
      parse_report_count(metadata_value(file.metadata, "num_reports"), kWhere + ": num_reports");
  if (out.num_reports > std::numeric_limits<std::size_t>::max()) {
    throw InvalidInput(kWhere + ": num_reports " + std::to_string(out.num_reports) +
                       " exceeds what this platform's size_t counts");
  }
  out.total_weight =
      parse_weight_total(metadata_value(file.metadata, "total_weight"), kWhere + ": total_weight");
  // Checkpoints written before the weight cap carry no num_capped: none was capped.
  const auto capped = file.metadata.find("num_capped");
  if (capped != file.metadata.end()) {
    out.num_capped = parse_report_count(capped->second, kWhere + ": num_capped");
  }
  // Checkpoints written before claims were kept carry none: the round's median is then unknown.
  const auto claims = file.metadata.find("claims");
  if (claims != file.metadata.end()) {
    out.claims = parse_claims(claims->second, kWhere + ": claims");
  }
  out.arrays = std::move(file.tensors);
  out.metadata = std::move(file.metadata);
  return out;
}

std::vector<std::pair<std::string, double>> read_round_checkpoint_clip_bounds(
    const std::uint8_t* data, std::size_t size) {
  const SafetensorsIndex index = index_safetensors(data, size);
  constexpr std::string_view kSuffix = "@clip";
  std::vector<std::pair<std::string, double>> bounds;
  for (const auto& [key, value] : index.metadata) {
    if (key.size() <= kSuffix.size() ||
        key.compare(key.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
      continue;
    }
    const std::size_t colon = value.find(':');
    const std::string kind = value.substr(0, colon);
    if (colon == std::string::npos || (kind != "norm" && kind != "rms")) {
      throw InvalidInput(kWhere + ": " + in_quotes(key) + " " + in_quotes(value) +
                         " is not \"norm:<bound>\" or \"rms:<bound>\"");
    }
    bounds.emplace_back(key.substr(0, key.size() - kSuffix.size()),
                        parse_weight_total(value.substr(colon + 1), kWhere + ": " + key));
  }
  return bounds;
}

}  // namespace fedleaf::core
