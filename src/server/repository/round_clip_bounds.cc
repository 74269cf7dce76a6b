#include "server/repository/round_clip_bounds.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text/text_format.h"
#include "server/repository/round_robustness.h"

namespace fedleaf::server {

namespace {

std::string robust_json_path(const RoundRecord& round) {
  return "round " + std::to_string(round.number) + " of population '" + round.population_id +
         "': robust_json";
}

nlohmann::json robust_object(const RoundRecord& round) {
  nlohmann::json robust = nlohmann::json::parse(round.robust_json, nullptr, false);
  if (!robust.is_object()) throw InvalidInput(robust_json_path(round) + " is not a JSON object");
  return robust;
}

}  // namespace

core::ClipBounds round_clip_bounds(const RoundRecord& round) {
  const std::string where = robust_json_path(round);
  const nlohmann::json robust = robust_object(round);
  const auto it = robust.find("clip_bound");
  core::ClipBounds bounds;
  if (it == robust.end()) return bounds;
  if (!it->is_object()) throw InvalidInput(where + ".clip_bound is not an object");
  for (const auto& [name, bound] : it->items()) {
    if (!bound.is_number()) {
      throw InvalidInput(where + ".clip_bound[" + core::in_quotes(name) + "] is not a number");
    }
    bounds.emplace_back(name, bound.get<double>());
  }
  return bounds;
}

std::optional<std::uint64_t> round_example_cap(const RoundRecord& round) {
  const nlohmann::json robust = robust_object(round);
  const auto it = robust.find("example_cap");
  if (it == robust.end()) return std::nullopt;
  constexpr std::uint64_t kMax = std::uint64_t{1} << 53;
  if (!it->is_number_unsigned() || it->get<std::uint64_t>() < 1 ||
      it->get<std::uint64_t>() > kMax) {
    throw InvalidInput(robust_json_path(round) + ".example_cap is not an integer in [1, 2^53]");
  }
  return it->get<std::uint64_t>();
}

std::string open_round_robust_json(const core::ClipBounds& bounds,
                                   std::optional<std::uint64_t> example_cap) {
  RoundRobustness robust;
  if (!bounds.empty()) robust.clip_bound = bounds;
  if (example_cap) robust.example_cap = example_cap;
  return robustness_json(robust);
}

}  // namespace fedleaf::server
