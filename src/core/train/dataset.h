// Local training data: sparse rows in CSR form (ids with optional weights) or dense float rows,
// each with an integer label. Nothing is densified: a sparse dataset costs its nonzeros.
//
//   Dataset d = Dataset::from_csr({0, 2, 3}, {7, 42, 7}, {}, {1, 0}, 262144);
//   d.size() == 2;  d.is_sparse();  d.global_ids()[d.offsets()[1]] == 7;
//   d.distinct_ids().rows() == {7, 42};  d.compact_ids() == {0, 1, 0};
//   auto [train, eval] = split_dataset(d, 0.2, 1);
//   for (std::uint32_t i : shuffled_order(d.size(), seed)) ...
//
// Labels are class ids (softmax losses) or 0/1 (sigmoid loss); the executor checks them against
// the plan. An empty weights vector means every weight is 1 (and from_csr drops weights that are
// all 1, so equal data has one representation). Limits: fewer than 2^32 nonzeros and examples.
//
// A sparse dataset stores each nonzero as its compact id, the id's rank among the dataset's
// distinct ids (CompactRows, at most 0.25 bytes per row of the id range): the same 4 bytes per
// nonzero as the id, and a session trains a compact table of exactly the distinct ids' rows, so
// batches index it with no lookup per id (one was a third of a step on a sparse linear model).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/train/compact_rows.h"

namespace fedleaf::core {

class Dataset {
 public:
  // Sparse rows: example i has ids[offsets[i] .. offsets[i+1]) with the same range of weights.
  // num_features bounds the ids (every id < num_features); 0 means max id + 1.
  // Throws InvalidInput when offsets are not labels.size() + 1 non-decreasing entries from 0 to
  // ids.size(), weights are neither empty nor ids.size() long, a weight is not finite, an id is
  // >= num_features, or a label is negative.
  static Dataset from_csr(std::vector<std::uint32_t> offsets, std::vector<std::uint32_t> ids,
                          std::vector<float> weights, std::vector<std::int32_t> labels,
                          std::uint32_t num_features = 0);
  // Dense rows: values is [labels.size(), num_columns] row-major. Throws InvalidInput on a size
  // mismatch, a non-finite value or a negative label.
  static Dataset from_dense(std::vector<float> values, std::size_t num_columns,
                            std::vector<std::int32_t> labels);

  bool is_sparse() const { return sparse_; }
  std::size_t size() const { return labels_.size(); }
  // Sparse: the id bound; dense: the number of columns.
  std::size_t num_features() const { return num_features_; }
  std::size_t num_nonzeros() const { return compact_ids_.size(); }

  const std::vector<std::uint32_t>& offsets() const { return offsets_; }
  // Nonzero j's id is distinct_ids().rows()[compact_ids()[j]].
  const std::vector<std::uint32_t>& compact_ids() const { return compact_ids_; }
  // The distinct ids, increasing (empty for dense rows).
  const CompactRows& distinct_ids() const { return distinct_ids_; }
  // Every nonzero's id, as given (a new vector, 4 bytes per nonzero).
  std::vector<std::uint32_t> global_ids() const;
  const std::vector<float>& weights() const { return weights_; }  // empty: all 1
  const std::vector<float>& dense_values() const { return dense_; }
  const std::vector<std::int32_t>& labels() const { return labels_; }

  // The examples at `examples` (any order, repeats allowed), as a new dataset of the same kind.
  // Throws InvalidInput for an index >= size().
  Dataset subset(const std::vector<std::uint32_t>& examples) const;

 private:
  Dataset() = default;
  bool sparse_ = true;
  std::size_t num_features_ = 0;
  std::vector<std::uint32_t> offsets_{0};
  std::vector<std::uint32_t> compact_ids_;
  CompactRows distinct_ids_;
  std::vector<float> weights_;
  std::vector<float> dense_;
  std::vector<std::int32_t> labels_;
};

// A permutation of 0..n-1 (Fisher-Yates over SeededRandom): identical on every platform.
std::vector<std::uint32_t> shuffled_order(std::size_t n, std::uint64_t seed);

struct DatasetSplit {
  Dataset train;
  Dataset eval;
};

// Shuffles with `seed` and puts round(eval_fraction * size) examples in eval, the rest in train,
// each in their original relative order. Throws InvalidInput unless 0 <= eval_fraction <= 1.
DatasetSplit split_dataset(const Dataset& dataset, double eval_fraction, std::uint64_t seed);
// Example i goes to eval when is_eval[i] != 0 (e.g. a split computed from record ids, as the
// SpamAssassin fixture does). Throws InvalidInput when is_eval.size() != dataset.size().
DatasetSplit split_dataset(const Dataset& dataset, const std::vector<std::uint8_t>& is_eval);

}  // namespace fedleaf::core
