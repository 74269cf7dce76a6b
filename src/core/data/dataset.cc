#include "core/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/data/seeded_random.h"
#include "core/error.h"

namespace fedleaf::core {
namespace {

void check_labels(const std::vector<std::int32_t>& labels) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0) {
      throw InvalidInput("dataset: label " + std::to_string(labels[i]) + " of example " +
                         std::to_string(i) + " is negative");
    }
  }
}

}  // namespace

Dataset::Input Dataset::sparse_input(std::vector<std::uint32_t> offsets,
                                     std::vector<std::uint32_t> ids, std::vector<float> weights,
                                     std::size_t examples, std::uint32_t num_features,
                                     const std::string& where) {
  if (ids.size() >= std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidInput(where + "at most 2^32 - 1 examples and nonzeros");
  }
  if (offsets.size() != examples + 1) {
    throw InvalidInput(where + "offsets has " + std::to_string(offsets.size()) +
                       " entries, expected labels + 1 = " + std::to_string(examples + 1));
  }
  if (offsets.front() != 0 || offsets.back() != ids.size()) {
    throw InvalidInput(where + "offsets must start at 0 and end at the number of ids (" +
                       std::to_string(ids.size()) + ")");
  }
  for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
    if (offsets[i + 1] < offsets[i]) {
      throw InvalidInput(where + "offsets decrease at example " + std::to_string(i));
    }
  }
  if (!weights.empty() && weights.size() != ids.size()) {
    throw InvalidInput(where + "weights has " + std::to_string(weights.size()) +
                       " entries, expected 0 or one per id (" + std::to_string(ids.size()) + ")");
  }
  for (std::size_t j = 0; j < weights.size(); ++j) {
    if (!std::isfinite(weights[j])) {
      throw InvalidInput(where + "weight of nonzero " + std::to_string(j) + " is not finite");
    }
  }
  if (std::all_of(weights.begin(), weights.end(), [](float w) { return w == 1.0f; })) {
    weights.clear();
  }
  std::uint32_t max_id = 0;
  for (std::uint32_t id : ids) max_id = std::max(max_id, id);
  if (num_features == 0) {
    num_features = ids.empty() ? 0 : max_id + 1;
    if (!ids.empty() && num_features == 0) {
      throw InvalidInput(where + "id 4294967295 leaves no room for num_features");
    }
  } else if (!ids.empty() && max_id >= num_features) {
    throw InvalidInput(where + "id " + std::to_string(max_id) + " is not below num_features " +
                       std::to_string(num_features));
  }
  Input in;
  in.sparse = true;
  in.num_features = num_features;
  in.offsets = std::move(offsets);
  in.distinct_ids = CompactRows::number_in_place(ids, num_features);
  in.compact_ids = std::move(ids);
  in.weights = std::move(weights);
  return in;
}

Dataset::Input Dataset::dense_input(std::vector<float> values, std::size_t num_columns,
                                    std::size_t examples, const std::string& where) {
  if (num_columns == 0 || values.size() / num_columns != examples ||
      values.size() % num_columns != 0) {
    throw InvalidInput(where + "dense values has " + std::to_string(values.size()) +
                       " entries, expected labels (" + std::to_string(examples) +
                       ") x num_columns (" + std::to_string(num_columns) +
                       ") with num_columns > 0");
  }
  for (std::size_t j = 0; j < values.size(); ++j) {
    if (!std::isfinite(values[j])) {
      throw InvalidInput(where + "dense value " + std::to_string(j % num_columns) + " of example " +
                         std::to_string(j / num_columns) + " is not finite");
    }
  }
  Input in;
  in.sparse = false;
  in.num_features = num_columns;
  in.dense = std::move(values);
  return in;
}

Dataset Dataset::from_csr(std::vector<std::uint32_t> offsets, std::vector<std::uint32_t> ids,
                          std::vector<float> weights, std::vector<std::int32_t> labels,
                          std::uint32_t num_features) {
  if (labels.size() >= std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidInput("dataset: at most 2^32 - 1 examples and nonzeros");
  }
  Dataset d;
  d.inputs_.push_back(sparse_input(std::move(offsets), std::move(ids), std::move(weights),
                                   labels.size(), num_features, "dataset: "));
  check_labels(labels);
  d.size_ = labels.size();
  d.labels_ = std::move(labels);
  return d;
}

Dataset Dataset::from_dense(std::vector<float> values, std::size_t num_columns,
                            std::vector<std::int32_t> labels) {
  if (labels.size() >= std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidInput("dataset: at most 2^32 - 1 examples");
  }
  Dataset d;
  d.inputs_.push_back(dense_input(std::move(values), num_columns, labels.size(), "dataset: "));
  check_labels(labels);
  d.size_ = labels.size();
  d.labels_ = std::move(labels);
  return d;
}

Dataset Dataset::from_columns(std::vector<InputColumns> inputs, std::size_t examples) {
  if (examples >= std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidInput("dataset: at most 2^32 - 1 examples");
  }
  if (inputs.empty()) throw InvalidInput("dataset: no inputs");
  Dataset d;
  d.size_ = examples;
  for (InputColumns& c : inputs) {
    // One input may go unnamed (a text dataset): it feeds a one-input plan's only input.
    if (c.name.empty() && inputs.size() > 1) {
      throw InvalidInput("dataset: an input has an empty name (only the input of a one-input " +
                         std::string("dataset may go unnamed)"));
    }
    for (const Input& earlier : d.inputs_) {
      if (earlier.name == c.name) {
        throw InvalidInput("dataset: input '" + c.name + "' is given twice");
      }
    }
    const std::string where = c.name.empty() ? "dataset: " : "dataset input '" + c.name + "': ";
    Input in = c.kind == InputKind::kSparseIds
                   ? sparse_input(std::move(c.offsets), std::move(c.ids), std::move(c.weights),
                                  examples, c.num_features, where)
                   : dense_input(std::move(c.dense), c.width, examples, where);
    in.name = c.name;
    d.inputs_.push_back(std::move(in));
  }
  return d;
}

Dataset Dataset::from_inputs(std::vector<InputColumns> inputs, std::vector<std::int32_t> labels) {
  Dataset d = from_columns(std::move(inputs), labels.size());
  check_labels(labels);
  d.labels_ = std::move(labels);
  return d;
}

Dataset Dataset::from_inputs(std::vector<InputColumns> inputs, Targets targets) {
  if (targets.width == 0 || targets.values.size() % targets.width != 0) {
    throw InvalidInput("dataset: targets has " + std::to_string(targets.values.size()) +
                       " values, not a multiple of the target width " +
                       std::to_string(targets.width) + " (> 0)");
  }
  for (std::size_t j = 0; j < targets.values.size(); ++j) {
    if (!std::isfinite(targets.values[j])) {
      throw InvalidInput("dataset: target " + std::to_string(j % targets.width) + " of example " +
                         std::to_string(j / targets.width) + " is not finite");
    }
  }
  Dataset d = from_columns(std::move(inputs), targets.values.size() / targets.width);
  d.targets_ = std::move(targets.values);
  d.target_width_ = targets.width;
  return d;
}

Dataset Dataset::subset(const std::vector<std::uint32_t>& examples) const {
  for (std::uint32_t e : examples) {
    if (e >= size()) {
      throw InvalidInput("dataset subset: example " + std::to_string(e) + " is outside [0, " +
                         std::to_string(size()) + ")");
    }
  }
  Dataset d;
  d.size_ = examples.size();
  d.target_width_ = target_width_;
  if (!labels_.empty()) {
    d.labels_.reserve(examples.size());
    for (std::uint32_t e : examples) d.labels_.push_back(labels_[e]);
  }
  if (target_width_ != 0) {
    d.targets_.reserve(examples.size() * target_width_);
    for (std::uint32_t e : examples) {
      const auto begin = targets_.begin() + static_cast<std::ptrdiff_t>(e * target_width_);
      d.targets_.insert(d.targets_.end(), begin,
                        begin + static_cast<std::ptrdiff_t>(target_width_));
    }
  }
  for (const Input& from : inputs_) {
    Input in;
    in.name = from.name;
    in.sparse = from.sparse;
    in.num_features = from.num_features;
    if (!from.sparse) {
      const std::size_t width = from.num_features;
      in.dense.reserve(examples.size() * width);
      for (std::uint32_t e : examples) {
        const auto begin = from.dense.begin() + static_cast<std::ptrdiff_t>(e * width);
        in.dense.insert(in.dense.end(), begin, begin + static_cast<std::ptrdiff_t>(width));
      }
      d.inputs_.push_back(std::move(in));
      continue;
    }
    // The subset's distinct ids are some of these: its ids are numbered again among them.
    const std::vector<std::uint32_t> global = from.distinct_ids.rows();
    std::size_t nnz = 0;
    for (std::uint32_t e : examples) nnz += from.offsets[e + 1] - from.offsets[e];
    std::vector<std::uint32_t> ids;
    ids.reserve(nnz);
    in.offsets.reserve(examples.size() + 1);
    for (std::uint32_t e : examples) {
      const std::uint32_t begin = from.offsets[e];
      const std::uint32_t end = from.offsets[e + 1];
      for (std::uint32_t j = begin; j < end; ++j) ids.push_back(global[from.compact_ids[j]]);
      if (!from.weights.empty()) {
        in.weights.insert(in.weights.end(), from.weights.begin() + begin,
                          from.weights.begin() + end);
      }
      in.offsets.push_back(static_cast<std::uint32_t>(ids.size()));
    }
    in.distinct_ids = CompactRows::number_in_place(ids, from.num_features);
    in.compact_ids = std::move(ids);
    d.inputs_.push_back(std::move(in));
  }
  return d;
}

std::vector<std::uint32_t> Dataset::global_ids(std::size_t i) const {
  const Input& in = inputs_[i];
  const std::vector<std::uint32_t> global = in.distinct_ids.rows();
  std::vector<std::uint32_t> out(in.compact_ids.size());
  for (std::size_t j = 0; j < out.size(); ++j) out[j] = global[in.compact_ids[j]];
  return out;
}

std::vector<std::uint32_t> shuffled_order(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
  SeededRandom rng(seed);
  for (std::size_t i = n; i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(rng.below(i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

DatasetSplit split_dataset(const Dataset& dataset, double eval_fraction, std::uint64_t seed) {
  if (!(eval_fraction >= 0.0 && eval_fraction <= 1.0)) {
    throw InvalidInput("split_dataset: eval_fraction must be in [0, 1], got " +
                       std::to_string(eval_fraction));
  }
  const std::vector<std::uint32_t> order = shuffled_order(dataset.size(), seed);
  const auto num_eval =
      static_cast<std::size_t>(std::llround(eval_fraction * static_cast<double>(dataset.size())));
  std::vector<std::uint8_t> is_eval(dataset.size(), 0);
  for (std::size_t i = 0; i < num_eval; ++i) is_eval[order[i]] = 1;
  return split_dataset(dataset, is_eval);
}

DatasetSplit split_dataset(const Dataset& dataset, const std::vector<std::uint8_t>& is_eval) {
  if (is_eval.size() != dataset.size()) {
    throw InvalidInput("split_dataset: is_eval has " + std::to_string(is_eval.size()) +
                       " flags for " + std::to_string(dataset.size()) + " examples");
  }
  std::vector<std::uint32_t> train;
  std::vector<std::uint32_t> eval;
  for (std::size_t i = 0; i < is_eval.size(); ++i) {
    (is_eval[i] ? eval : train).push_back(static_cast<std::uint32_t>(i));
  }
  return {dataset.subset(train), dataset.subset(eval)};
}

}  // namespace fedleaf::core
