// Records → the Dataset of a plan's inputs in one step: featurize_records (featurize_records.h),
// then Dataset::from_inputs. What the wasm module's Dataset.fromRecords and Plan.datasetFromRecords
// run, so records cross into wasm once (as JSON text) and only the dataset's handle comes back;
// featurize_records alone stays for inspecting the columns.
//
//   Dataset d = dataset_from_records(plan.input_features,
//                                    R"([{"body": "win cash now"}, {"body": "lunch?"}])", {1, 0});
//
// One label (or one row of targets) per record. Errors: featurize_records' ("records[3].length:
// ..."), Dataset::from_inputs' ("dataset: no inputs" for a plan whose inputs have no "features"),
// and InvalidInput "labels: 2 labels for 3 records (one per record)".
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/data/dataset.h"
#include "core/features/input_features.h"

namespace fedleaf::core {

Dataset dataset_from_records(const std::vector<InputFeatures>& inputs,
                             std::string_view records_json, std::vector<std::int32_t> labels);
// Float targets (mean_squared_error): [records, targets.width] row-major.
Dataset dataset_from_records(const std::vector<InputFeatures>& inputs,
                             std::string_view records_json, Dataset::Targets targets);

}  // namespace fedleaf::core
