#include "core/train/plan_tables.h"

#include <algorithm>
#include <map>

#include "core/error.h"

namespace fedleaf::core {

std::vector<PlanTable> plan_tables(const ModelSpec& model) {
  std::map<std::size_t, PlanTable> by_owner;
  for (const FeedSpec& feed : model.feeds) {
    if (!feed.sparse) continue;
    PlanTable& t = by_owner[feed.table_layer];
    if (std::find(t.inputs.begin(), t.inputs.end(), feed.input) == t.inputs.end()) {
      t.inputs.push_back(feed.input);
    }
  }
  // A lookup: a layer reading a sparse_ids input, whose ids index the owner's table.
  const auto reads_ids = [&model](const LayerSpec& l) {
    return std::any_of(l.sources.begin(), l.sources.end(), [&model](const NodeRef& s) {
      return s.is_input && model.inputs[s.index].kind == InputKind::kSparseIds;
    });
  };
  for (auto& [owner, t] : by_owner) {
    t.owner = owner;
    t.parameter = model.layers[owner].owned_table->parameter;
    for (std::size_t i = 0; i < model.layers.size(); ++i) {
      const LayerSpec& l = model.layers[i];
      if (reads_ids(l) && l.table_layer == owner) t.lookups.push_back(i);
    }
  }
  // The shape the model declares for the table: [vocab, dim].
  for (const ParameterSpec& p : parameter_specs(model)) {
    for (auto& [owner, t] : by_owner) {
      if (p.name != t.parameter) continue;
      t.vocab = p.shape.at(0);
      t.dim = p.shape.at(1);
    }
  }
  std::vector<PlanTable> out;
  out.reserve(by_owner.size());
  for (auto& [owner, t] : by_owner) out.push_back(std::move(t));
  return out;
}

const PlanTable& find_table(const std::vector<PlanTable>& tables, const std::string& parameter) {
  std::string names;
  for (const PlanTable& t : tables) {
    if (t.parameter == parameter) return t;
    names += (names.empty() ? "" : ", ") + t.parameter;
  }
  throw InvalidInput("'" + parameter + "' is no embedding table of the model (tables: " + names +
                     ")");
}

}  // namespace fedleaf::core
