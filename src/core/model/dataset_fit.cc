#include "core/model/dataset_fit.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace fedleaf::core {

std::vector<std::size_t> dataset_inputs_for(const ModelSpec& spec, const Dataset& dataset) {
  if (dataset.num_inputs() == 1 && dataset.input_name(0).empty()) {
    if (spec.inputs.size() != 1) {
      throw InvalidInput("dataset: one unnamed input, but plan.model.inputs has " +
                         std::to_string(spec.inputs.size()) +
                         " (a dataset from_inputs names them)");
    }
    return {0};
  }
  std::vector<std::size_t> out;
  for (const InputSpec& input : spec.inputs) {
    std::size_t k = 0;
    while (k < dataset.num_inputs() && dataset.input_name(k) != input.name) ++k;
    if (k == dataset.num_inputs()) {
      throw InvalidInput("dataset: no input '" + input.name + "' (" + input.path + ")");
    }
    out.push_back(k);
  }
  for (std::size_t k = 0; k < dataset.num_inputs(); ++k) {
    if (std::find(out.begin(), out.end(), k) == out.end()) {
      throw InvalidInput("dataset: input '" + dataset.input_name(k) +
                         "' is no input of plan.model.inputs");
    }
  }
  return out;
}

namespace {

// Throws when an id of dataset input `k` is not below `table`'s rows.
void check_ids_below(const Dataset& dataset, std::size_t k, const TableSpec& table) {
  const CompactRows& distinct = dataset.distinct_ids(k);
  if (distinct.end_row() <= table.rows) return;
  // Compact ids increase with ids: the ids not below vocab are the compact ids from `first`.
  const std::vector<std::uint32_t> rows = distinct.rows();
  const auto first = static_cast<std::uint32_t>(
      std::lower_bound(rows.begin(), rows.end(), table.rows) - rows.begin());
  const std::vector<std::uint32_t>& compact = dataset.compact_ids(k);
  const std::vector<std::uint32_t>& offsets = dataset.offsets(k);
  const auto j =
      static_cast<std::size_t>(std::find_if(compact.begin(), compact.end(),
                                            [first](std::uint32_t c) { return c >= first; }) -
                               compact.begin());
  const auto i = static_cast<std::size_t>(std::upper_bound(offsets.begin(), offsets.end(), j) -
                                          offsets.begin() - 1);
  const std::string input =
      dataset.input_name(k).empty() ? "" : " of input '" + dataset.input_name(k) + "'";
  throw InvalidInput("dataset: id " + std::to_string(rows[compact[j]]) + " of example " +
                     std::to_string(i) + input + " is not below " + table.rows_field + " " +
                     std::to_string(table.rows));
}

}  // namespace

void check_dataset_fits(const ModelSpec& spec, const Dataset& dataset) {
  if (dataset.size() == 0) throw InvalidInput("dataset: no examples");
  const std::vector<std::size_t> from = dataset_inputs_for(spec, dataset);
  for (std::size_t m = 0; m < spec.inputs.size(); ++m) {
    const InputSpec& in = spec.inputs[m];
    const std::size_t k = from[m];
    if (in.kind == InputKind::kSparseIds) {
      if (!dataset.is_sparse(k)) {
        throw InvalidInput("dataset: dense rows, but " + in.path + " is sparse_ids");
      }
    } else if (dataset.is_sparse(k) || dataset.num_features(k) != in.dim) {
      throw InvalidInput("dataset: " + in.path + " needs dense rows of width " +
                         std::to_string(in.dim) + ", the dataset has " +
                         (dataset.is_sparse(k)
                              ? std::string("sparse ids")
                              : "rows of width " + std::to_string(dataset.num_features(k))));
    }
  }
  // Every lookup reads its ids through a sparse feed of (input, table).
  for (const FeedSpec& f : spec.feeds) {
    if (f.sparse) check_ids_below(dataset, from[f.input], feed_table(spec, f));
  }
  if (spec.loss == LossType::kMeanSquaredError) {
    if (dataset.target_width() != spec.output_width) {
      throw InvalidInput("dataset: plan.model.loss mean_squared_error needs " +
                         std::to_string(spec.output_width) + " float target(s) per example, " +
                         (dataset.has_targets()
                              ? "the dataset has " + std::to_string(dataset.target_width())
                              : std::string("the dataset has class labels")));
    }
    return;
  }
  if (dataset.has_targets()) {
    throw InvalidInput(
        "dataset: float targets are for mean_squared_error, plan.model.loss needs "
        "class labels");
  }
  const std::vector<std::int32_t>& labels = dataset.labels();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const bool ok =
        spec.loss == LossType::kSigmoidCrossEntropy
            ? (labels[i] == 0 || labels[i] == 1)
            : (labels[i] >= 0 && static_cast<std::size_t>(labels[i]) < spec.output_width);
    if (!ok) {
      throw InvalidInput("dataset: label " + std::to_string(labels[i]) + " of example " +
                         std::to_string(i) + " is invalid for plan.model.loss (" +
                         (spec.loss == LossType::kSigmoidCrossEntropy
                              ? std::string("labels 0 or 1")
                              : "class ids below " + std::to_string(spec.output_width)) +
                         ")");
    }
  }
}

}  // namespace fedleaf::core
