// One round of aggregation on the server: one accumulator per tensor named in the plan's
// "updates", fed whole client train results, producing the next global model.
//
//   const UpdatePlan plan = parse_update_plan(plan_json);   // once, where the JSON arrives
//   RoundAggregator round(plan, global_model, /*expected_reports=*/clients_per_round);
//   round.add_result(upload.data(), upload.size());    // all-or-nothing, throws InvalidInput
//   std::vector<std::uint8_t> ckpt = round.checkpoint();  // persist a half-finished round
//   auto resumed = RoundAggregator::restore(plan, global_model, ckpt.data(), ckpt.size());
//   NamedTensors next = resumed.next_model();          // model + aggregated delta, per tensor
//
// Bytes in, bytes out: every input that crosses a process boundary (train results, checkpoints)
// is safetensors, so the server and the wasm module bind this class without adapters.
// Not thread-safe: one thread at a time per instance (merge() partial aggregators instead).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/aggregation/updates/update_plan.h"
#include "core/privacy/round_noise.h"
#include "core/privacy/tree_noise.h"
#include "core/tensor/tensor.h"
#include "core/wire/result_format.h"

namespace fedleaf::core {

// What the robust rules did in a round so far (status JSON, dashboard).
struct RoundStats {
  std::uint64_t num_reports = 0;
  // Reports whose claimed num_examples exceeded the plan's max_examples_per_report and were
  // weighted with the cap instead.
  std::uint64_t num_capped = 0;
  // The cap the round weighed reports with (0: off), and the lower median of the num_examples its
  // reports claimed, before the cap (0 without reports, or when the round resumed from a
  // checkpoint that predates claim lists): what the next round's adaptive cap follows.
  std::uint64_t example_cap = 0;
  std::uint64_t median_claim = 0;
  // Per tensor of the plan's updates (by name, sorted): reports whose update was scaled down
  // by clipping (the tensor's "clip", or clipped_weighted_mean's clip_norm).
  std::vector<std::pair<std::string, std::uint64_t>> clipped_per_tensor;
  // Per tensor of the plan's updates with a robust clip (by name, sorted): the bound it clipped
  // at this round (rms or norm, as the plan's clip says; for an adaptive clip the round's bound).
  ClipBounds clip_bound_per_tensor;
  // Per tensor of the plan's updates with a row clip (by name, sorted): rows of reports scaled
  // down by it (sparse_sum_operator.h, "Row clip").
  std::vector<std::pair<std::string, std::uint64_t>> rows_clipped_per_tensor;
  // Per tensor of the plan's updates (by name, sorted): keys (rows for row_sparse) the next
  // model leaves unchanged because fewer than the tensor's min_contributors reports sent them
  // (mean_over_contributors; 0 elsewhere).
  std::vector<std::pair<std::string, std::uint64_t>> withheld_per_tensor;
  // Elements next_model() kept at their old value because the new one was not finite in their
  // dtype; filled only by next_model(&stats) (it costs a pass over the model).
  std::uint64_t withheld_nonfinite = 0;
};

// One tensor's aggregate of a round: what next_model() adds to the model, and what a server
// optimizer (server_optimizer.h) takes as the round's delta.
struct TensorAggregate {
  std::string name;
  UpdateEncoding encoding = UpdateEncoding::kDense;
  // The accumulator's finalize(): a DenseTensor (dense encoding), or the canonical SparseTensor
  // (coo) / RowSparseTensor (row_sparse) of the keys the round changes, in the model's dtype —
  // or I64 when `counts`.
  Tensor delta;
  bool counts = false;  // the operator finalizes to counts (count), not to values
  // A dense encoding without reports, or below min_contributors: `delta` is zeros and the tensor
  // keeps its value.
  bool withheld = false;
};

class RoundAggregator {
 public:
  // plan: the plan's parsed "updates" section; model: the round's global model.
  // expected_reports: how many train results the round will probably receive (e.g. its goal
  // count of clients), 0 when unknown. A sparse accumulator uses it with the size of the first
  // result to choose its representation and table size up front, instead of growing and
  // switching on the way; results never depend on it.
  // Throws InvalidInput if the plan names no tensor, or a tensor the model lacks or holds as
  // anything but a dense F32/F64 tensor.
  RoundAggregator(const UpdatePlan& plan, NamedTensors model, std::size_t expected_reports = 0);
  RoundAggregator(const RoundAggregator& other);
  RoundAggregator(RoundAggregator&& other) noexcept;
  RoundAggregator& operator=(const RoundAggregator& other);
  RoundAggregator& operator=(RoundAggregator&& other) noexcept;
  ~RoundAggregator();

  // Validates the whole train result (safetensors bytes) before folding any of it: all or
  // nothing. Throws InvalidInput naming the tensor and rule; the aggregator is then unchanged.
  // The weight is metadata "num_examples" (an integer in [1, 2^53]), capped at the plan's
  // max_examples_per_report, times weight_scale in (0, 1] (a buffered population's staleness
  // weight, buffered_spec.h; 1 for a synchronous round): the operators and total_weight() see
  // the scaled weight. InvalidInput for a scale outside (0, 1].
  void add_result(const std::uint8_t* data, std::size_t size, double weight_scale = 1.0);
  // The same from the result's index (index_result of the index.file_size bytes at `data`) and
  // `header` = read_result_header(index, ResultKind::kTrain), both read by the caller (the
  // server's upload path): the header is parsed once per upload.
  void add_result(const SafetensorsIndex& index, const std::uint8_t* data,
                  const ResultHeader& header, double weight_scale = 1.0);
  // Folds another aggregator of the same plan and model (hierarchical aggregation). Throws
  // InvalidInput, leaving this aggregator unchanged, when the plans or models differ.
  void merge(const RoundAggregator& other);
  std::size_t num_reports() const;
  // Counts of the robust rules (capped, clipped, withheld below min_contributors);
  // withheld_nonfinite stays 0 here. O(touched keys).
  RoundStats stats() const;
  double total_weight() const;  // sum of num_examples, each capped at max_examples_per_report
  // The example count a report claiming `claimed` examples is weighed with in this round: claimed,
  // capped at the round's max_examples_per_report (before any weight scale). What a server shows
  // of a report (examples, mean train loss) is computed from it, never from the claim.
  std::uint64_t folded_examples(std::uint64_t claimed) const;
  // Global model + aggregated delta for every tensor in "updates"; other tensors carried over.
  // With no reports the deltas are zero. Does not change the aggregator. Always finite: an
  // element whose new value would overflow its dtype (finite but huge updates can make the f64
  // sum exceed F32's range) keeps its old value; their number goes to *withheld_nonfinite.
  NamedTensors next_model(std::uint64_t* withheld_nonfinite = nullptr) const;
  // next_model(), built in the round's model itself instead of in a copy of it (a 16.8 MB copy
  // per close on the demo job): for an aggregator's last use, a server's round close. The same
  // bits as next_model(). Afterwards model() is empty (next_model() and merge() no longer
  // apply); the accumulators, stats() and aggregates() are unchanged.
  NamedTensors take_next_model(std::uint64_t* withheld_nonfinite = nullptr);
  // Every accumulator's aggregate, in the plan's order (by name); next_model() is the model plus
  // these. Does not change the aggregator.
  std::vector<TensorAggregate> aggregates() const;
  // The round's global model (the one next_model() starts from).
  const NamedTensors& model() const;
  // Accumulator state as safetensors bytes, and its inverse, for checkpoint/resume. restore()
  // validates everything (the bytes come from disk) and throws InvalidInput when they do not
  // describe a state of this plan and model.
  std::vector<std::uint8_t> checkpoint() const;
  static RoundAggregator restore(const UpdatePlan& plan, NamedTensors model,
                                 const std::uint8_t* data, std::size_t size);
  // The robust clip bound each accumulator of a checkpoint was saved with (tensors whose clip is
  // off are absent): what with_clip_bounds() needs to restore a round whose bounds are known only
  // from its checkpoint. Reads the header alone; InvalidInput for bytes that are not safetensors
  // or a clip entry that is not "norm:<bound>" or "rms:<bound>".
  static ClipBounds checkpoint_clip_bounds(const std::uint8_t* data, std::size_t size);

  // A private round (the plan's privacy is set): add_result checks a report's tensors against the
  // plan as always, then adds it whole to a PrivateSum (private_sum.h: clipped to the plan's
  // clip_norm over every tensor together, summed on the noise's grid, row by row, never
  // densified) instead of the operators. Its only output is private_aggregates: the sum
  // released with round `tree_round`'s tree noise (1-based) under `secret`, over the fixed
  // denominator, one dense kDense aggregate per tensor of the plan in the model's dtype (every
  // row noised), for model + delta or a server optimizer's step. next_model, take_next_model,
  // aggregates, checkpoint and merge are Conflict for a private round: none of them may publish
  // or persist the un-noised sum (a private round is rebuilt from its stored results instead).
  // stats() of a private round holds its reports and example counts, nothing per tensor.
  // `drawn`, when given, is round `tree_round`'s noise drawn ahead from private_noise_shape()
  // under `secret` (round_noise.h): the same release without the draws (InvalidInput "noise: ..."
  // when it was drawn for another round or shape).
  bool is_private() const;
  std::vector<TensorAggregate> private_aggregates(const TreeNoiseSecret& secret,
                                                  std::uint64_t tree_round,
                                                  const RoundNoise* drawn = nullptr) const;
  // What a private round's release noise is drawn for (Conflict unless private): a copy, so the
  // noise can be drawn on another thread while reports still come.
  RoundNoiseShape private_noise_shape() const;

 private:
  class State;
  explicit RoundAggregator(std::unique_ptr<State> state);
  void refuse_if_private(const char* what) const;  // Conflict naming `what` when private
  std::unique_ptr<State> state_;
};

}  // namespace fedleaf::core
