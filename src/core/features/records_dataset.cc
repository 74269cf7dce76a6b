#include "core/features/records_dataset.h"

#include <string>
#include <utility>

#include "core/error.h"
#include "core/features/featurize_records.h"

namespace fedleaf::core {
namespace {

// The number of records the columns hold (every column has one example per record).
std::size_t records_in(const std::vector<InputColumns>& columns) {
  if (columns.empty()) return 0;
  const InputColumns& c = columns.front();
  if (c.kind == InputKind::kDense) return c.width == 0 ? 0 : c.dense.size() / c.width;
  return c.offsets.size() - 1;
}

void check_one_per_record(const std::vector<InputColumns>& columns, std::size_t count,
                          const char* what) {
  if (columns.empty()) return;  // from_inputs names the missing inputs
  const std::size_t records = records_in(columns);
  if (count == records) return;
  throw InvalidInput(std::string("labels: ") + std::to_string(count) + " " + what + " for " +
                     std::to_string(records) + " records (one per record)");
}

}  // namespace

Dataset dataset_from_records(const std::vector<InputFeatures>& inputs,
                             std::string_view records_json, std::vector<std::int32_t> labels) {
  std::vector<InputColumns> columns = featurize_records(inputs, records_json);
  check_one_per_record(columns, labels.size(), "labels");
  return Dataset::from_inputs(std::move(columns), std::move(labels));
}

Dataset dataset_from_records(const std::vector<InputFeatures>& inputs,
                             std::string_view records_json, Dataset::Targets targets) {
  std::vector<InputColumns> columns = featurize_records(inputs, records_json);
  // A width that does not divide the targets is from_inputs' error.
  if (targets.width != 0 && targets.values.size() % targets.width == 0) {
    check_one_per_record(columns, targets.values.size() / targets.width, "rows of targets");
  }
  return Dataset::from_inputs(std::move(columns), std::move(targets));
}

}  // namespace fedleaf::core
