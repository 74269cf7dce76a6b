#include "core/train/table_rows.h"

#include <algorithm>

#include "core/data/compact_rows.h"
#include "core/model/dataset_fit.h"

namespace fedleaf::core {

std::vector<std::size_t> table_inputs(const PlanTable& table,
                                      const std::vector<std::size_t>& from) {
  std::vector<std::size_t> inputs;
  for (const std::size_t input : table.inputs) {
    if (std::find(inputs.begin(), inputs.end(), from[input]) == inputs.end()) {
      inputs.push_back(from[input]);
    }
  }
  return inputs;
}

std::vector<std::uint32_t> table_distinct_ids(const Plan& plan, const Dataset& dataset,
                                              const std::string& tensor) {
  const PlanTable& table = find_table(plan.tables, tensor);
  std::vector<const CompactRows*> sets;
  for (const std::size_t k : table_inputs(table, dataset_inputs_for(plan.model, dataset))) {
    sets.push_back(&dataset.distinct_ids(k));
  }
  if (sets.size() == 1) return sets.front()->rows();
  return CompactRows::union_of(sets, nullptr).rows();
}

}  // namespace fedleaf::core
