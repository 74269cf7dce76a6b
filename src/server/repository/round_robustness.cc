#include "server/repository/round_robustness.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text/text_format.h"

namespace fedleaf::server {

using nlohmann::json;

namespace {

template <class Pairs>
json object_of(const Pairs& pairs) {
  json out = json::object();
  for (const auto& [tensor, value] : pairs) out[tensor] = value;
  return out;
}

[[noreturn]] void fail(const std::string& key, const char* expected) {
  throw Error("robust_json." + key + " is not " + expected);
}

std::uint64_t count_of(const json& value, const std::string& key) {
  if (!value.is_number_unsigned()) fail(key, "a count");
  return value.get<std::uint64_t>();
}

RoundRobustness::PerTensor counts_of(const json& value, const std::string& key) {
  if (!value.is_object()) fail(key, "an object of counts");
  RoundRobustness::PerTensor out;
  for (const auto& [tensor, count] : value.items()) out[tensor] = count_of(count, key);
  return out;
}

core::ClipBounds bounds_of(const json& value, const std::string& key) {
  if (!value.is_object()) fail(key, "an object of numbers");
  core::ClipBounds out;
  for (const auto& [tensor, bound] : value.items()) {
    if (!bound.is_number_float()) fail(key, "an object of numbers");
    out.emplace_back(tensor, bound.get<double>());
  }
  return out;
}

}  // namespace

RoundRobustness closed_round_robustness(const core::RoundStats& stats,
                                        std::uint64_t withheld_nonfinite,
                                        const core::ClipBounds& next_clip_bounds,
                                        std::optional<std::uint64_t> next_example_cap) {
  RoundRobustness out;
  out.clipped =
      RoundRobustness::PerTensor(stats.clipped_per_tensor.begin(), stats.clipped_per_tensor.end());
  out.clipped_rows = RoundRobustness::PerTensor(stats.rows_clipped_per_tensor.begin(),
                                                stats.rows_clipped_per_tensor.end());
  out.clip_bound = stats.clip_bound_per_tensor;
  out.next_clip_bound = next_clip_bounds;
  out.capped = stats.num_capped;
  out.example_cap =
      stats.example_cap == 0 ? std::nullopt : std::optional<std::uint64_t>(stats.example_cap);
  out.next_example_cap = next_example_cap;
  out.withheld_rows = RoundRobustness::PerTensor(stats.withheld_per_tensor.begin(),
                                                 stats.withheld_per_tensor.end());
  out.withheld_nonfinite = withheld_nonfinite;
  return out;
}

json robustness_to_json(const RoundRobustness& robust) {
  json out = json::object();
  if (robust.clipped) out["clipped"] = object_of(*robust.clipped);
  if (robust.clipped_rows) out["clipped_rows"] = object_of(*robust.clipped_rows);
  if (robust.clip_bound) out["clip_bound"] = object_of(*robust.clip_bound);
  if (robust.next_clip_bound) out["next_clip_bound"] = object_of(*robust.next_clip_bound);
  if (robust.capped) out["capped"] = *robust.capped;
  if (robust.example_cap) {
    out["example_cap"] = *robust.example_cap ? json(**robust.example_cap) : json(nullptr);
  }
  if (robust.next_example_cap) out["next_example_cap"] = *robust.next_example_cap;
  if (robust.withheld_rows) out["withheld_rows"] = object_of(*robust.withheld_rows);
  if (robust.withheld_nonfinite) out["withheld_nonfinite"] = *robust.withheld_nonfinite;
  if (robust.staleness) out["staleness"] = staleness_counts_json(*robust.staleness);
  return out;
}

std::string robustness_json(const RoundRobustness& robust) {
  return robustness_to_json(robust).dump();
}

RoundRobustness read_robustness(const std::string& robust_json) {
  const json stored = json::parse(robust_json, nullptr, false);
  if (!stored.is_object()) throw Error("robust_json is not a JSON object");
  RoundRobustness out;
  for (const auto& [key, value] : stored.items()) {
    if (key == "clipped") {
      out.clipped = counts_of(value, key);
    } else if (key == "clipped_rows") {
      out.clipped_rows = counts_of(value, key);
    } else if (key == "clip_bound") {
      out.clip_bound = bounds_of(value, key);
    } else if (key == "next_clip_bound") {
      out.next_clip_bound = bounds_of(value, key);
    } else if (key == "capped") {
      out.capped = count_of(value, key);
    } else if (key == "example_cap") {
      out.example_cap =
          value.is_null() ? std::nullopt : std::optional<std::uint64_t>(count_of(value, key));
    } else if (key == "next_example_cap") {
      out.next_example_cap = count_of(value, key);
    } else if (key == "withheld_rows") {
      out.withheld_rows = counts_of(value, key);
    } else if (key == "withheld_nonfinite") {
      out.withheld_nonfinite = count_of(value, key);
    } else if (key == "staleness") {
      out.staleness = read_staleness_counts(value, "robust_json." + key);
    } else {
      throw Error("robust_json: unknown part " + core::in_quotes(key));
    }
  }
  return out;
}

}  // namespace fedleaf::server
