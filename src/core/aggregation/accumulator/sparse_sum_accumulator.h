// A streaming, mergeable accumulator of one sparse-sum operator over one tensor.
//
//   SparseSumAccumulator acc("emb/weight", {SparseSumOperator::kMeanOverContributors},
//                            UpdateEncoding::kRowSparse, DType::F32, {262144, 16});
//   acc.add(client_update, /*weight=*/num_examples);   // throws InvalidInput, acc unchanged
//   acc.merge(partial_from_another_shard);
//   Tensor delta = acc.finalize();                     // canonical RowSparseTensor, F32
//
// Contracts
// - Input (checked by add() and check(); a rejected update leaves the accumulator exactly as it
//   was): the update's encoding is the accumulator's; its values' dtype is the accumulator's;
//   its dense_shape equals the accumulator's; indices are in range (SparseTensor and
//   RowSparseTensor enforce this on construction, and the values count must match them);
//   every value is finite; the weight is finite and > 0.
// - Robust clipping (OperatorSpec::clip, see sparse_sum_operator.h) scales an update before it
//   is folded; the constructor rejects it for count (no values) and clipped_weighted_mean
//   (which clips by its own clip_norm).
// - Duplicates in one update are summed first for operators that need it
//   (needs_coalesced_input), so a client counts once per index; for sum and weighted_mean the
//   fold is linear and duplicates are folded as they come.
// - Arithmetic: every value is widened to f64 and accumulated in f64 (plain summation, f64
//   whatever the input dtype); finalize() divides in f64 and rounds once to the input dtype.
//   Reordering adds or merges changes a result by at most about (number of terms) × 2^-53
//   relative to Σ|terms| of that index; with one fixed order the result is bitwise the same
//   whichever representation was used.
// - finalize() returns the accumulator's encoding: dense → DenseTensor of dense_shape; coo →
//   canonical SparseTensor; row_sparse → canonical RowSparseTensor. Its index set is the union
//   of the indices the updates sent (a sent zero stays present). Values have the input dtype,
//   except count, whose values are I64 (for row_sparse every element of a row holds the row's
//   count). An accumulator with no updates finalizes to zeros (dense) or to no entries.
// - min_contributors (mean_over_contributors, OperatorSpec::min_contributors = k > 1): finalize()
//   leaves out every key fewer than k reports sent (a dense encoding: every key while
//   num_updates() < k, as zeros); num_withheld() counts them. Results of the kept keys do not
//   depend on k.
//
// Representations (sparse encodings; a dense-encoded tensor is always a dense array)
// - sparse: a KeySlotMap (key → slot) plus per-slot arrays: key u64, value sums f64 × width,
//   contributor weight f64 (mean_over_contributors, count), report count f64 (with
//   min_contributors). Memory O(distinct touched keys).
// - dense: f64 value sums for every key, plus either f64 contributor weights (the operators
//   that track them; weight > 0 marks a touched key) or a 1-bit touched mask, plus f64 report
//   counts with min_contributors.
// A key is the row-major linear index for coo and the row number for row_sparse (width = the
// row's element count). Under RepresentationPolicy::kAuto the accumulator starts sparse and
// switches to dense when growing the sparse structure would make it at least as large as the
// dense one: dense is then no larger, and it is faster per folded value (a direct store versus
// a hash probe; scripts/bench.sh aggregate measures both). For coo weighted_mean that is when
// the touched fraction is between about 1/8 and 1/4 of dense_shape (dense costs 8.125 bytes per
// key; the sparse table costs 16 bytes per entry at load ≤ 1/2 plus 16 bytes per touched key,
// and grows by doubling). With expected_entries the choice is made up front from the projected
// touched count, which avoids holding both structures during a switch; expected_updates does
// the same at the first add(), projecting from that update's entry count.
// Both representations reserve their large arrays on transparent huge pages on Linux before the
// first write (huge_page_reserve.h): faulting in 4 KiB pages cost as much as the fold at 10^7
// keys.
// finalize() and save() visit the touched keys once in key order: the dense representation
// scans its touched bitmap word by word (or its contributor weights), the sparse one radix-sorts
// its (key, slot) pairs.
//
// Not thread-safe; merge() partial accumulators built on other threads instead.
//
// Where the code is: the fold engine (constructor, add, fold, merge) in
// sparse_sum_accumulator.cc; what each operator means (what it tracks, its scaling, its finalize
// rule, its checkpoint check) in operators/<operator>.h, dispatched by operator_rules();
// validation and coalescing of one update in prepare_update.cc; representation planning and
// switching in representation_plan.cc; finalize() in accumulator_finalize.cc; save()/load() in
// accumulator_checkpoint.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/aggregation/accumulator/key_slot_map.h"
#include "core/aggregation/operators/sparse_sum_operator.h"
#include "core/aggregation/operators/update_encoding.h"
#include "core/tensor/tensor.h"

namespace fedleaf::core {

enum class Representation { kSparse, kDense };
enum class RepresentationPolicy { kAuto, kSparse, kDense };

struct AccumulatorOptions {
  RepresentationPolicy policy = RepresentationPolicy::kAuto;
  // Estimated number of entries (coo: index rows; row_sparse: rows) all updates together will
  // add, 0 when unknown. Under kAuto it picks the representation (and the table size) up
  // front, assuming uniformly spread indices; results never depend on it.
  std::uint64_t expected_entries = 0;
  // Estimated number of updates (e.g. the clients of a round), 0 when unknown. Used only when
  // expected_entries is 0: the first add() then plans as if expected_entries were
  // expected_updates × that update's entry count. Results never depend on it.
  std::uint64_t expected_updates = 0;
};

class SparseSumAccumulator {
 public:
  // `name` labels error messages. dtype must be F32 or F64; dense_shape must have a
  // non-negative element count below 2^63, and rank ≥ 1 for row_sparse. Arrays the
  // accumulator may have to hold must be addressable with this platform's size_t (on wasm32,
  // 2^32 bytes): the f64 sums of one row (row_sparse), of the whole tensor (dense encoding or
  // RepresentationPolicy::kDense). Sparse encodings otherwise accept any key space below 2^63
  // (keys are 64-bit everywhere); under kAuto they then stay sparse. Throws InvalidInput.
  SparseSumAccumulator(std::string name, OperatorSpec spec, UpdateEncoding encoding, DType dtype,
                       DenseShape dense_shape, AccumulatorOptions options = {});

  // Throws InvalidInput naming the tensor and the rule when add(update, weight) would reject.
  void check(const Tensor& update, double weight) const;
  // Validates, then folds. Strong guarantee: on any exception the accumulator is unchanged.
  void add(const Tensor& update, double weight);
  // add() in two steps, for a caller that folds several tensors all or nothing (RoundAggregator
  // checks every tensor of an upload before folding any): check_and_keep validates as check()
  // does and keeps the prepared update (its keys, clip scale and clipped copy); add_kept folds
  // it without preparing it again — preparing (finite scan, norms, row clip) cost as much as the
  // fold itself. add_kept takes the very Tensor object last kept (not a temporary converted
  // from a DenseTensor or SparseTensor), unchanged since, else it throws
  // std::logic_error; only the last kept update is held, and add() or merge() drop it.
  void check_and_keep(const Tensor& update, double weight);
  void add_kept(const Tensor& update);
  // Folds another accumulator of the same operator, encoding, dtype and dense_shape (else
  // InvalidInput, unchanged). Strong guarantee.
  void merge(const SparseSumAccumulator& other);
  Tensor finalize() const;
  // finalize()'s rows without the tensor, for a row_sparse accumulator that finalizes to values
  // (not counts; else std::logic_error): visit(row, values) for each row finalize() would hold,
  // in row order, `values` being the row's row_size() values in dtype() (float or double) exactly
  // as finalize() writes them, valid during the call. RoundAggregator adds them to the model
  // without a 15 MB delta tensor per demo round close.
  void for_each_finalized_row(
      const std::function<void(std::uint64_t row, const void* values)>& visit) const;

  const std::string& name() const { return name_; }
  const OperatorSpec& spec() const { return spec_; }
  UpdateEncoding encoding() const { return encoding_; }
  DType dtype() const { return dtype_; }
  const DenseShape& dense_shape() const { return dense_shape_; }
  std::uint64_t num_updates() const { return num_updates_; }
  // Updates scaled down by spec().clip or by clipped_weighted_mean's clip_norm.
  std::uint64_t num_clipped() const { return num_clipped_; }
  // Rows scaled down by spec().row_clip, over all updates (0 when the row clip is off).
  std::uint64_t num_rows_clipped() const { return num_rows_clipped_; }
  double total_weight() const { return total_weight_; }
  Representation representation() const { return representation_; }
  // Distinct keys touched so far (all keys for a dense encoding). O(keys) when dense.
  std::uint64_t num_touched() const;
  // Touched keys finalize() leaves out because fewer than spec().min_contributors reports sent
  // them (0 when the threshold is off). O(touched keys).
  std::uint64_t num_withheld() const;
  // Bytes held by the accumulator's arrays now, and the most it has held at once (including
  // both tables during a rehash or a switch). Not counted: the object itself, small fields and
  // the scratch buffers of the update being added (O(one update)).
  std::size_t state_bytes() const;
  std::size_t peak_state_bytes() const { return peak_bytes_; }

  // Checkpoint: the state as arrays named `<prefix>@keys` (I64), `<prefix>@sums` (F64),
  // `<prefix>@contributors` (F64), `<prefix>@reports` (F64 report counts, with
  // min_contributors on a sparse encoding) and metadata `<prefix>@operator`, `@clip_norm`,
  // `@clip` ("norm:<bound>" | "rms:<bound>", absent when off), `@min_contributors` (absent when
  // off), `@row_clip` and `@num_rows_clipped` (absent when off), `@encoding`, `@dtype`,
  // `@dense_shape`, `@num_updates`, `@num_clipped`, `@total_weight`. Keys are stored sorted, so the
  // checkpoint does not depend on the representation.
  void save(const std::string& prefix, NamedTensors& tensors, Metadata& metadata) const;
  // Inverse of save(). Validates everything (the data comes from disk); throws InvalidInput.
  static SparseSumAccumulator load(const std::string& prefix, const NamedTensors& tensors,
                                   const Metadata& metadata, AccumulatorOptions options = {});
  // save()/load() of this accumulator alone as safetensors bytes, prefix = name().
  std::vector<std::uint8_t> to_safetensors() const;
  static SparseSumAccumulator from_safetensors(const std::uint8_t* data, std::size_t size,
                                               AccumulatorOptions options = {});

 private:
  // A validated update, ready to fold.
  struct Prepared {
    // Sparse encodings: one key per entry, either the update's own index array (rank-1 coo,
    // row_sparse: non-negative int64 read as uint64) or `keys`.
    const std::uint64_t* key_data = nullptr;
    std::size_t key_count = 0;
    std::vector<std::uint64_t> keys;
    std::vector<double> coalesced;  // values, when duplicates had to be summed first
    bool use_coalesced = false;
    bool clipped = false;             // value_scale includes a clipping factor < 1
    std::uint64_t rows_clipped = 0;   // rows the row clip scaled down (in `coalesced`)
    double weight = 0.0;              // n_c
    double value_scale = 1.0;         // multiplies every value: 1, n_c or n_c·s_c
    double contributor_weight = 0.0;  // added per touched key: n_c or 1
  };

  // Whether per-key report counts are kept (min_contributors on a sparse encoding).
  bool counts_reports() const {
    return spec_.min_contributors > 1 && encoding_ != UpdateEncoding::kDense;
  }
  // Whether the key at `pos` (a touched key) is in finalize()'s result.
  bool kept(std::size_t pos) const {
    return !counts_reports() || reports_[pos] >= static_cast<double>(spec_.min_contributors);
  }

  void prepare(const Tensor& update, double weight, Prepared& out) const;
  // Under kAuto, picks the representation and reserves the table for `expected_entries`
  // uniformly spread entries (before any key is stored).
  void plan_for(std::uint64_t expected_entries);
  // Whether the dense arrays of every key fit this platform's address space.
  bool dense_addressable() const;
  void fold(const Tensor& update, const Prepared& prepared);
  // The end of add() and add_kept(): scratch_ holds `update` prepared.
  void fold_prepared(const Tensor& update);
  template <class T>
  void fold_entries(const std::uint64_t* keys, std::size_t count, const T* values,
                    double value_scale, double contributor_weight);
  // Makes room for `extra` more keys without allocating during the fold; may switch to dense.
  void reserve_keys(std::size_t extra);
  void switch_to_dense();
  // Appends a zeroed slot for a key the map just inserted (sparse representation).
  void append_slot(std::uint64_t key);
  // Position of `key` in the value arrays, inserting it (sparse) or marking it touched (dense,
  // no contributors). Requires reserve_keys() to have made room.
  std::size_t position_for(std::uint64_t key);
  std::size_t dense_bytes() const;
  std::size_t slot_bytes() const;
  std::size_t sparse_bytes(std::size_t table_capacity, std::size_t slot_capacity) const;
  void note_bytes(std::size_t transient_extra = 0);
  // Calls visit(key, position) for every touched key in increasing key order, position being
  // the key's place in the value arrays. One pass; the sparse representation sorts its keys
  // first (O(touched) extra memory).
  template <class Visit>
  void for_each_touched(Visit&& visit) const;

  std::string name_;
  OperatorSpec spec_;
  UpdateEncoding encoding_;
  DType dtype_;
  DenseShape dense_shape_;
  std::vector<std::uint64_t> strides_;  // row-major strides of dense_shape (coo keys)
  std::uint64_t num_keys_ = 0;          // elements (dense, coo) or rows (row_sparse)
  std::size_t width_ = 1;               // values per key
  AccumulatorOptions options_;
  Representation representation_ = Representation::kSparse;

  std::uint64_t num_updates_ = 0;
  std::uint64_t num_clipped_ = 0;
  std::uint64_t num_rows_clipped_ = 0;
  double total_weight_ = 0.0;
  // Both representations: indexed by slot (sparse) or by key (dense).
  std::vector<double> sums_;          // × width_; empty for count
  std::vector<double> contributors_;  // tracks_contributors() operators, sparse encodings
  std::vector<double> reports_;       // counts_reports(): reports that sent the key
  // Sparse representation only.
  KeySlotMap map_;
  std::vector<std::uint64_t> slot_keys_;
  // Dense representation of a sparse encoding whose operator does not track contributors.
  std::vector<std::uint64_t> touched_bits_;

  std::size_t peak_bytes_ = 0;
  Prepared scratch_;              // reused by add() so the hot path does not allocate per update
  const Tensor* kept_ = nullptr;  // the update check_and_keep left prepared in scratch_
};

}  // namespace fedleaf::core
