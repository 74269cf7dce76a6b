// RoundAggregator::checkpoint, restore and checkpoint_clip_bounds: a half-finished round as
// safetensors bytes and back.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "core/aggregation/operators/operator_table.h"
#include "core/aggregation/round_aggregator.h"
#include "core/aggregation/round_state.h"
#include "core/aggregation/sparse_sum_accumulator.h"
#include "core/error.h"
#include "core/text/text_format.h"
#include "core/wire/safetensors.h"
#include "core/wire/safetensors_index.h"

namespace fedleaf::core {
namespace {

// v2 added per-key report counts (min_contributors). A v1 checkpoint still restores: its round
// finishes under the rules it started with, without the threshold (it has no counts), and the
// next round applies the plan's min_contributors.
constexpr const char* kCheckpointFormat = "fedleaf.round_aggregator.v2";
constexpr const char* kCheckpointFormatV1 = "fedleaf.round_aggregator.v1";
constexpr std::uint64_t kMaxExactWeight = std::uint64_t{1} << 53;

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

// Claims as checkpoint metadata: decimal integers joined by ',' ("" for none).
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

const std::string& metadata_value(const Metadata& metadata, const std::string& key,
                                  const std::string& where) {
  const auto it = metadata.find(key);
  if (it == metadata.end())
    throw InvalidInput(where + ": metadata " + in_quotes(key) + " is missing");
  return it->second;
}

}  // namespace

std::vector<std::uint8_t> RoundAggregator::checkpoint() const {
  NamedTensors tensors;
  Metadata metadata{{"format", kCheckpointFormat},
                    {"num_reports", std::to_string(state_->num_reports)},
                    {"total_weight", format_double_exact(state_->total_weight)},
                    {"num_capped", std::to_string(state_->num_capped)}};
  if (state_->claims_known) metadata.emplace("claims", join_claims(state_->claims));
  for (const SparseSumAccumulator& acc : state_->accumulators) {
    acc.save(acc.name(), tensors, metadata);
  }
  return write_safetensors(tensors, metadata);
}

RoundAggregator RoundAggregator::restore(const UpdatePlan& plan, NamedTensors model,
                                         const std::uint8_t* data, std::size_t size) {
  RoundAggregator round(plan, std::move(model));
  SafetensorsReadOptions options;
  options.require_finite = true;
  const SafetensorsFile file = read_safetensors(data, size, options);
  const std::string where = "round checkpoint";
  const std::string& format = metadata_value(file.metadata, "format", where);
  const bool v1 = format == kCheckpointFormatV1;
  if (format != kCheckpointFormat && !v1) {
    throw InvalidInput(where + ": format " + in_quotes(format) + " is not " +
                       in_quotes(kCheckpointFormat) + " (nor the older " +
                       in_quotes(kCheckpointFormatV1) + ")");
  }
  const std::uint64_t reports = parse_report_count(
      metadata_value(file.metadata, "num_reports", where), where + ": num_reports");
  if (reports > std::numeric_limits<std::size_t>::max()) {
    throw InvalidInput(where + ": num_reports " + std::to_string(reports) +
                       " exceeds what this platform's size_t counts");
  }
  const double total = parse_weight_total(metadata_value(file.metadata, "total_weight", where),
                                          where + ": total_weight");
  std::vector<SparseSumAccumulator>& accumulators = round.state_->accumulators;
  for (const auto& [name, tensor] : file.tensors) {
    const bool known = std::any_of(
        accumulators.begin(), accumulators.end(), [&n = name](const SparseSumAccumulator& a) {
          return n == a.name() + "@keys" || n == a.name() + "@sums" ||
                 n == a.name() + "@contributors" || n == a.name() + "@reports";
        });
    if (!known) {
      throw InvalidInput(where + ": tensor " + in_quotes(name) +
                         " belongs to no accumulator of the plan");
    }
  }
  for (SparseSumAccumulator& planned : accumulators) {
    SparseSumAccumulator loaded =
        SparseSumAccumulator::load(planned.name(), file.tensors, file.metadata);
    const std::string what = where + ": accumulator " + in_quotes(planned.name());
    OperatorSpec expected = planned.spec();
    if (v1) expected.min_contributors = 0;  // v1 kept no report counts
    // A round checkpointed before row clipping finishes without it (as it started).
    if (loaded.spec().row_clip == 0.0) expected.row_clip = 0.0;
    if (loaded.spec() != expected || loaded.encoding() != planned.encoding() ||
        loaded.dtype() != planned.dtype() || loaded.dense_shape() != planned.dense_shape()) {
      throw InvalidInput(what + " was saved for " + std::string(operator_name(loaded.spec().op)) +
                         " of a " + std::string(update_encoding_name(loaded.encoding())) + " " +
                         std::string(dtype_name(loaded.dtype())) + " tensor of dense_shape " +
                         shape_to_string(loaded.dense_shape()) + ", which the plan does not say");
    }
    if (loaded.num_updates() != reports || loaded.total_weight() != total) {
      throw InvalidInput(what + " holds " + std::to_string(loaded.num_updates()) +
                         " updates of total weight " + format_double_exact(loaded.total_weight()) +
                         ", but the round has " + std::to_string(reports) + " of " +
                         format_double_exact(total));
    }
    planned = std::move(loaded);
  }
  // Checkpoints written before the weight cap carry no num_capped: none was capped.
  const auto capped = file.metadata.find("num_capped");
  const std::uint64_t num_capped = capped == file.metadata.end()
                                       ? 0
                                       : parse_report_count(capped->second, where + ": num_capped");
  if (num_capped > reports) {
    throw InvalidInput(where + ": num_capped " + std::to_string(num_capped) +
                       " exceeds num_reports " + std::to_string(reports));
  }
  round.state_->num_capped = num_capped;
  // Checkpoints written before claims were kept carry none: the round's median is then unknown.
  const auto claims = file.metadata.find("claims");
  round.state_->claims_known = claims != file.metadata.end();
  if (round.state_->claims_known) {
    round.state_->claims = parse_claims(claims->second, where + ": claims");
    if (round.state_->claims.size() != reports) {
      throw InvalidInput(where + ": claims lists " + std::to_string(round.state_->claims.size()) +
                         " reports' num_examples, but the round has " + std::to_string(reports));
    }
  }
  round.state_->num_reports = static_cast<std::size_t>(reports);
  round.state_->total_weight = total;
  return round;
}

ClipBounds RoundAggregator::checkpoint_clip_bounds(const std::uint8_t* data, std::size_t size) {
  const SafetensorsIndex index = index_safetensors(data, size);
  constexpr std::string_view kSuffix = "@clip";
  ClipBounds bounds;
  for (const auto& [key, value] : index.metadata) {
    if (key.size() <= kSuffix.size() ||
        key.compare(key.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
      continue;
    }
    const std::size_t colon = value.find(':');
    const std::string kind = value.substr(0, colon);
    if (colon == std::string::npos || (kind != "norm" && kind != "rms")) {
      throw InvalidInput("round checkpoint: " + in_quotes(key) + " " + in_quotes(value) +
                         " is not \"norm:<bound>\" or \"rms:<bound>\"");
    }
    bounds.emplace_back(key.substr(0, key.size() - kSuffix.size()),
                        parse_weight_total(value.substr(colon + 1), "round checkpoint: " + key));
  }
  return bounds;
}

}  // namespace fedleaf::core
