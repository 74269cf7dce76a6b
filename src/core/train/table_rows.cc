#include "core/train/table_rows.h"

#include <algorithm>
#include <optional>

#include "core/data/compact_rows.h"
#include "core/error.h"
#include "core/model/model.h"

namespace fedleaf::core {

std::vector<std::size_t> table_inputs(const ModelSpec& spec, const std::vector<std::size_t>& from,
                                      std::size_t table_layer) {
  std::vector<std::size_t> inputs;
  for (const FeedSpec& f : spec.feeds) {
    if (!f.sparse || f.table_layer != table_layer) continue;
    if (std::find(inputs.begin(), inputs.end(), from[f.input]) == inputs.end()) {
      inputs.push_back(from[f.input]);
    }
  }
  return inputs;
}

std::vector<std::uint32_t> table_distinct_ids(const ModelSpec& spec, const Dataset& dataset,
                                              const std::string& tensor) {
  std::string tables;
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    const std::optional<TableSpec>& table = spec.layers[i].owned_table;
    if (!table) continue;
    if (table->parameter != tensor) {
      tables += (tables.empty() ? "" : ", ") + table->parameter;
      continue;
    }
    std::vector<const CompactRows*> sets;
    for (const std::size_t k : table_inputs(spec, dataset_inputs_for(spec, dataset), i)) {
      sets.push_back(&dataset.distinct_ids(k));
    }
    if (sets.size() == 1) return sets.front()->rows();
    return CompactRows::union_of(sets, nullptr).rows();
  }
  throw InvalidInput("'" + tensor + "' is no embedding table of the model (tables: " + tables +
                     ")");
}

}  // namespace fedleaf::core
