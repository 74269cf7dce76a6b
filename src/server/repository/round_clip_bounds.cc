#include "server/repository/round_clip_bounds.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text_format.h"

namespace fedleaf::server {

core::ClipBounds round_clip_bounds(const RoundRecord& round) {
  const std::string where = "round " + std::to_string(round.number) + " of population '" +
                            round.population_id + "': robust_json";
  const nlohmann::json robust = nlohmann::json::parse(round.robust_json, nullptr, false);
  if (!robust.is_object()) throw InvalidInput(where + " is not a JSON object");
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

std::string open_round_robust_json(const core::ClipBounds& bounds) {
  if (bounds.empty()) return "{}";
  nlohmann::json clip_bound = nlohmann::json::object();
  for (const auto& [name, bound] : bounds) clip_bound[name] = bound;
  return nlohmann::json{{"clip_bound", clip_bound}}.dump();
}

}  // namespace fedleaf::server
