// The embedding tables of a plan's model, worked out once when the plan is parsed (Plan::tables):
// which layer owns each, which layers look it up and which inputs feed it. What the checks of a
// plan's features against the vocab, a session's compact rows, the rows a leaf asks model:select
// for, and (through the wasm Plan handle) the JS leaf read; none of them works it out again.
//
//   for (const PlanTable& t : plan.tables) t.parameter;   // "tokens/weight", in owner order
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/model/model_spec.h"

namespace fedleaf::core {

struct PlanTable {
  std::string parameter;             // "<owner>/weight"
  std::size_t owner = 0;             // ModelSpec::layers index of the layer owning it
  std::vector<std::size_t> lookups;  // the embedding_bag layers reading it (the owner first)
  std::vector<std::size_t> inputs;   // ModelSpec::inputs feeding it, in first-read order
  std::size_t vocab = 0;             // its rows
  std::size_t dim = 0;
};

// The tables of `model`, ordered by owner layer. A table is read through at least one feed.
std::vector<PlanTable> plan_tables(const ModelSpec& model);

// The table named `parameter` ("<owner>/weight"), or InvalidInput naming the tables there are.
const PlanTable& find_table(const std::vector<PlanTable>& tables, const std::string& parameter);

}  // namespace fedleaf::core
