// The rows of each embedding table a dataset touches: the union of the distinct ids of every
// input feeding the table (a shared table's lookups on several inputs). What a leaf asks
// model:select for, table by table, and what its session trains.
//
//   std::vector<std::uint32_t> rows = table_distinct_ids(plan, dataset, "tokens/weight");
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/dataset.h"
#include "core/train/plan.h"

namespace fedleaf::core {

// The dataset inputs (indices) feeding `table`, in first-read order; `from` maps model inputs
// to dataset inputs (dataset_inputs_for).
std::vector<std::size_t> table_inputs(const PlanTable& table, const std::vector<std::size_t>& from);

// The sorted distinct ids `dataset` holds for the embedding table named `tensor`
// ("<owner>/weight"). Throws InvalidInput when the model has no such table, or the dataset does
// not feed the model's inputs (dataset_inputs_for).
std::vector<std::uint32_t> table_distinct_ids(const Plan& plan, const Dataset& dataset,
                                              const std::string& tensor);

}  // namespace fedleaf::core
