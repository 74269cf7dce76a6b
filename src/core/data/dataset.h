// Local training data: one or more named inputs, each sparse rows in CSR form (ids with optional
// weights) or dense float rows, and per example an integer label (classification) or float
// targets (mean_squared_error). Nothing is densified: a sparse input costs its nonzeros.
//
//   Dataset m = Dataset::from_inputs({body, numeric}, {1, 0});     // InputColumns, labels
//   m.num_inputs() == 2;  m.input_name(1) == "numeric";  m.offsets(0) ...
//   Dataset r = Dataset::from_inputs({ids}, Dataset::Targets{{0.5f, 2.0f}, 1});
//
//   Dataset d = Dataset::from_csr({0, 2, 3}, {7, 42, 7}, {}, {1, 0}, 262144);
//   d.size() == 2;  d.is_sparse();  d.global_ids()[d.offsets()[1]] == 7;
//   d.distinct_ids().rows() == {7, 42};  d.compact_ids() == {0, 1, 0};
//   auto [train, eval] = split_dataset(d, 0.2, 1);
//   for (std::uint32_t i : shuffled_order(d.size(), seed)) ...
//
// from_csr and from_dense make a one-input dataset whose input name is "" (so does from_inputs
// given one unnamed input: a text plan's records, core/features/input_features.h): it feeds a
// one-input plan's only input, whatever that input's name; a dataset with named inputs feeds a
// plan's inputs by name. The accessors without an input number read input 0.
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
#include <string>
#include <utility>
#include <vector>

#include "core/data/compact_rows.h"
#include "core/data/input_columns.h"

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

  // Float targets of a regression (mean_squared_error): [examples, width] row-major.
  struct Targets {
    std::vector<float> values;
    std::size_t width = 1;
  };
  // Several named inputs (names unique and not empty; the only input may be unnamed), each with
  // the same number of examples as the labels (targets). Throws InvalidInput naming the input for
  // what from_csr / from_dense refuse, a repeated or empty name, or no input; non-finite targets
  // too.
  static Dataset from_inputs(std::vector<InputColumns> inputs, std::vector<std::int32_t> labels);
  static Dataset from_inputs(std::vector<InputColumns> inputs, Targets targets);

  std::size_t size() const { return size_; }
  std::size_t num_inputs() const { return inputs_.size(); }
  const std::string& input_name(std::size_t i) const { return inputs_[i].name; }

  // Input i's columns (the accessors without i: input 0).
  bool is_sparse(std::size_t i = 0) const { return inputs_[i].sparse; }
  // Sparse: the id bound; dense: the number of columns.
  std::size_t num_features(std::size_t i = 0) const { return inputs_[i].num_features; }
  std::size_t num_nonzeros(std::size_t i = 0) const { return inputs_[i].compact_ids.size(); }
  const std::vector<std::uint32_t>& offsets(std::size_t i = 0) const { return inputs_[i].offsets; }
  // Nonzero j's id is distinct_ids().rows()[compact_ids()[j]].
  const std::vector<std::uint32_t>& compact_ids(std::size_t i = 0) const {
    return inputs_[i].compact_ids;
  }
  // The distinct ids, increasing (empty for dense rows).
  const CompactRows& distinct_ids(std::size_t i = 0) const { return inputs_[i].distinct_ids; }
  // Every nonzero's id, as given (a new vector, 4 bytes per nonzero).
  std::vector<std::uint32_t> global_ids(std::size_t i = 0) const;
  const std::vector<float>& weights(std::size_t i = 0) const { return inputs_[i].weights; }
  const std::vector<float>& dense_values(std::size_t i = 0) const { return inputs_[i].dense; }
  // Class labels; empty for a dataset of targets.
  const std::vector<std::int32_t>& labels() const { return labels_; }
  bool has_targets() const { return target_width_ != 0; }
  const std::vector<float>& targets() const { return targets_; }
  std::size_t target_width() const { return target_width_; }

  // The examples at `examples` (any order, repeats allowed), as a new dataset of the same kind.
  // Throws InvalidInput for an index >= size().
  Dataset subset(const std::vector<std::uint32_t>& examples) const;

 private:
  struct Input {
    std::string name;
    bool sparse = true;
    std::size_t num_features = 0;
    std::vector<std::uint32_t> offsets{0};
    std::vector<std::uint32_t> compact_ids;
    CompactRows distinct_ids;
    std::vector<float> weights;
    std::vector<float> dense;
  };
  Dataset() = default;
  static Input sparse_input(std::vector<std::uint32_t> offsets, std::vector<std::uint32_t> ids,
                            std::vector<float> weights, std::size_t examples,
                            std::uint32_t num_features, const std::string& where);
  static Input dense_input(std::vector<float> values, std::size_t num_columns, std::size_t examples,
                           const std::string& where);
  static Dataset from_columns(std::vector<InputColumns> inputs, std::size_t examples);

  std::size_t size_ = 0;
  std::vector<Input> inputs_;
  std::vector<std::int32_t> labels_;
  std::vector<float> targets_;
  std::size_t target_width_ = 0;
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
