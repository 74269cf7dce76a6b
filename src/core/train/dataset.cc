#include "core/train/dataset.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/train/seeded_random.h"

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

Dataset Dataset::from_csr(std::vector<std::uint32_t> offsets, std::vector<std::uint32_t> ids,
                          std::vector<float> weights, std::vector<std::int32_t> labels,
                          std::uint32_t num_features) {
  if (labels.size() >= std::numeric_limits<std::uint32_t>::max() ||
      ids.size() >= std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidInput("dataset: at most 2^32 - 1 examples and nonzeros");
  }
  if (offsets.size() != labels.size() + 1) {
    throw InvalidInput("dataset: offsets has " + std::to_string(offsets.size()) +
                       " entries, expected labels + 1 = " + std::to_string(labels.size() + 1));
  }
  if (offsets.front() != 0 || offsets.back() != ids.size()) {
    throw InvalidInput("dataset: offsets must start at 0 and end at the number of ids (" +
                       std::to_string(ids.size()) + ")");
  }
  for (std::size_t i = 0; i + 1 < offsets.size(); ++i) {
    if (offsets[i + 1] < offsets[i]) {
      throw InvalidInput("dataset: offsets decrease at example " + std::to_string(i));
    }
  }
  if (!weights.empty() && weights.size() != ids.size()) {
    throw InvalidInput("dataset: weights has " + std::to_string(weights.size()) +
                       " entries, expected 0 or one per id (" + std::to_string(ids.size()) + ")");
  }
  for (std::size_t j = 0; j < weights.size(); ++j) {
    if (!std::isfinite(weights[j])) {
      throw InvalidInput("dataset: weight of nonzero " + std::to_string(j) + " is not finite");
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
      throw InvalidInput("dataset: id 4294967295 leaves no room for num_features");
    }
  } else if (!ids.empty() && max_id >= num_features) {
    throw InvalidInput("dataset: id " + std::to_string(max_id) + " is not below num_features " +
                       std::to_string(num_features));
  }
  check_labels(labels);
  Dataset d;
  d.sparse_ = true;
  d.num_features_ = num_features;
  d.offsets_ = std::move(offsets);
  d.distinct_ids_ = CompactRows::number_in_place(ids, num_features);
  d.compact_ids_ = std::move(ids);
  d.weights_ = std::move(weights);
  d.labels_ = std::move(labels);
  return d;
}

Dataset Dataset::from_dense(std::vector<float> values, std::size_t num_columns,
                            std::vector<std::int32_t> labels) {
  if (labels.size() >= std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidInput("dataset: at most 2^32 - 1 examples");
  }
  if (num_columns == 0 || values.size() / num_columns != labels.size() ||
      values.size() % num_columns != 0) {
    throw InvalidInput("dataset: dense values has " + std::to_string(values.size()) +
                       " entries, expected labels (" + std::to_string(labels.size()) +
                       ") x num_columns (" + std::to_string(num_columns) +
                       ") with num_columns > 0");
  }
  for (std::size_t j = 0; j < values.size(); ++j) {
    if (!std::isfinite(values[j])) {
      throw InvalidInput("dataset: dense value " + std::to_string(j % num_columns) +
                         " of example " + std::to_string(j / num_columns) + " is not finite");
    }
  }
  check_labels(labels);
  Dataset d;
  d.sparse_ = false;
  d.num_features_ = num_columns;
  d.dense_ = std::move(values);
  d.labels_ = std::move(labels);
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
  d.sparse_ = sparse_;
  d.num_features_ = num_features_;
  d.labels_.reserve(examples.size());
  for (std::uint32_t e : examples) d.labels_.push_back(labels_[e]);
  if (!sparse_) {
    d.dense_.reserve(examples.size() * num_features_);
    for (std::uint32_t e : examples) {
      const auto begin = dense_.begin() + static_cast<std::ptrdiff_t>(e * num_features_);
      d.dense_.insert(d.dense_.end(), begin, begin + static_cast<std::ptrdiff_t>(num_features_));
    }
    return d;
  }
  // The subset's distinct ids are some of these: its ids are numbered again among them.
  const std::vector<std::uint32_t> global = distinct_ids_.rows();
  std::size_t nnz = 0;
  for (std::uint32_t e : examples) nnz += offsets_[e + 1] - offsets_[e];
  std::vector<std::uint32_t> ids;
  ids.reserve(nnz);
  d.offsets_.reserve(examples.size() + 1);
  for (std::uint32_t e : examples) {
    const std::uint32_t begin = offsets_[e];
    const std::uint32_t end = offsets_[e + 1];
    for (std::uint32_t j = begin; j < end; ++j) ids.push_back(global[compact_ids_[j]]);
    if (!weights_.empty()) {
      d.weights_.insert(d.weights_.end(), weights_.begin() + begin, weights_.begin() + end);
    }
    d.offsets_.push_back(static_cast<std::uint32_t>(ids.size()));
  }
  d.distinct_ids_ = CompactRows::number_in_place(ids, num_features_);
  d.compact_ids_ = std::move(ids);
  return d;
}

std::vector<std::uint32_t> Dataset::global_ids() const {
  const std::vector<std::uint32_t> global = distinct_ids_.rows();
  std::vector<std::uint32_t> out(compact_ids_.size());
  for (std::size_t j = 0; j < out.size(); ++j) out[j] = global[compact_ids_[j]];
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
