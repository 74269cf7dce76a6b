#include "core/aggregation/round/round_aggregator.h"

#include <algorithm>

#include "core/aggregation/accumulator/sparse_sum_accumulator.h"
#include "core/aggregation/robust/adaptive_example_cap.h"
#include "core/aggregation/round/round_state.h"
#include "core/error.h"
#include "core/text/text_format.h"
#include "core/wire/result_format.h"
#include "core/wire/safetensors.h"

namespace fedleaf::core {
namespace {

std::vector<SparseSumAccumulator> accumulators_from_plan(const UpdatePlan& plan,
                                                         const NamedTensors& model,
                                                         AccumulatorOptions options) {
  if (plan.tensors.empty()) {
    throw InvalidInput("plan.updates: missing or empty (a round aggregates at least one tensor)");
  }
  std::vector<SparseSumAccumulator> accumulators;
  for (const TensorUpdatePlan& t : plan.tensors) {
    const std::string& where = t.path;
    const auto it = model.find(t.name);
    if (it == model.end())
      throw InvalidInput(where + ": the model has no tensor " + in_quotes(t.name));
    const auto* param = std::get_if<DenseTensor>(&it->second);
    if (!param) throw InvalidInput(where + ": model tensor " + in_quotes(t.name) + " is not dense");
    if (param->dtype() != DType::F32 && param->dtype() != DType::F64) {
      throw InvalidInput(where + ": model tensor " + in_quotes(t.name) + " has dtype " +
                         std::string(dtype_name(param->dtype())) + ", not F32 or F64");
    }
    DenseShape shape;
    for (std::size_t d : param->shape()) shape.push_back(static_cast<std::int64_t>(d));
    accumulators.emplace_back(t.name, t.op, t.encoding, param->dtype(), std::move(shape), options);
  }
  return accumulators;
}

// The full shape and dtype of each tensor of the plan, from the model (checked dense F32/F64 by
// accumulators_from_plan): what a private sum releases, every row of.
TensorLayouts private_layouts(const UpdatePlan& plan, const NamedTensors& model) {
  TensorLayouts layouts;
  for (const TensorUpdatePlan& t : plan.tensors) {
    const auto& param = std::get<DenseTensor>(model.at(t.name));
    layouts.emplace(t.name, TensorLayout{param.dtype(), param.shape()});
  }
  return layouts;
}

}  // namespace

RoundAggregator::RoundAggregator(const UpdatePlan& plan, NamedTensors model,
                                 std::size_t expected_reports)
    : state_(std::make_unique<State>()) {
  AccumulatorOptions options;
  options.expected_updates = expected_reports;
  state_->accumulators = accumulators_from_plan(plan, model, options);
  state_->max_examples_per_report = plan.max_examples_per_report;
  if (plan.privacy) state_->private_sum.emplace(private_layouts(plan, model), *plan.privacy);
  state_->model = std::move(model);
}

bool RoundAggregator::is_private() const { return state_->private_sum.has_value(); }

void RoundAggregator::refuse_if_private(const char* what) const {
  if (state_->private_sum) {
    throw Conflict(std::string(what) +
                   ": not for a private round (only private_aggregates releases its sum, with "
                   "noise; it is rebuilt from its stored results, never checkpointed)");
  }
}

std::vector<TensorAggregate> RoundAggregator::private_aggregates(const TreeNoiseSecret& secret,
                                                                 std::uint64_t tree_round,
                                                                 const RoundNoise* drawn) const {
  if (!state_->private_sum) {
    throw Conflict("private_aggregates: the round is not private (the plan has no privacy)");
  }
  if (drawn && drawn->round() != tree_round) {
    throw InvalidInput("noise: drawn for tree round " + std::to_string(drawn->round()) +
                       ", the release is of round " + std::to_string(tree_round));
  }
  NamedTensors released = drawn ? state_->private_sum->release(*drawn)
                                : state_->private_sum->release(secret, tree_round);
  std::vector<TensorAggregate> out;
  out.reserve(released.size());
  for (auto& [name, delta] : released) {
    TensorAggregate a;
    a.name = name;
    a.encoding = UpdateEncoding::kDense;
    a.delta = std::move(delta);
    out.push_back(std::move(a));
  }
  return out;
}

RoundNoiseShape RoundAggregator::private_noise_shape() const {
  if (!state_->private_sum) {
    throw Conflict("private_noise_shape: the round is not private (the plan has no privacy)");
  }
  return state_->private_sum->noise_shape();
}

RoundAggregator::RoundAggregator(std::unique_ptr<State> state) : state_(std::move(state)) {}
RoundAggregator::RoundAggregator(const RoundAggregator& other)
    : state_(std::make_unique<State>(*other.state_)) {}
RoundAggregator::RoundAggregator(RoundAggregator&& other) noexcept = default;
RoundAggregator& RoundAggregator::operator=(const RoundAggregator& other) {
  if (this != &other) state_ = std::make_unique<State>(*other.state_);
  return *this;
}
RoundAggregator& RoundAggregator::operator=(RoundAggregator&& other) noexcept = default;
RoundAggregator::~RoundAggregator() = default;

void RoundAggregator::add_result(const std::uint8_t* data, std::size_t size, double weight_scale) {
  const SafetensorsIndex index = index_result(data, size);
  add_result(index, data, read_result_header(index, ResultKind::kTrain), weight_scale);
}

void RoundAggregator::add_result(const SafetensorsIndex& index, const std::uint8_t* data,
                                 const ResultHeader& header, double weight_scale) {
  if (!(weight_scale > 0.0 && weight_scale <= 1.0)) {
    throw InvalidInput("train result: weight scale must be in (0, 1], got " +
                       format_double_exact(weight_scale));
  }
  const std::uint64_t claimed = header.num_examples;
  SafetensorsReadOptions options;
  options.require_finite = true;
  const SafetensorsFile file = read_safetensors(index, data, options);
  const std::string where = "train result";
  const std::uint64_t folded = folded_examples(claimed);
  const bool capped = folded != claimed;
  const double weight = static_cast<double>(folded) * weight_scale;
  for (const auto& [name, tensor] : file.tensors) {
    const bool planned = std::any_of(
        state_->accumulators.begin(), state_->accumulators.end(),
        [&tensor_name = name](const SparseSumAccumulator& a) { return a.name() == tensor_name; });
    if (!planned) {
      throw InvalidInput(where + ": tensor " + in_quotes(name) +
                         " is not named in the plan's updates");
    }
  }
  for (SparseSumAccumulator& acc : state_->accumulators) {
    const auto it = file.tensors.find(acc.name());
    if (it == file.tensors.end()) {
      throw InvalidInput(where + ": lacks tensor " + in_quotes(acc.name()) +
                         " named in the plan's updates");
    }
    if (!state_->private_sum) acc.check_and_keep(it->second, weight);
  }
  if (state_->private_sum) {
    state_->private_sum->add(file.tensors);  // all or nothing: unchanged when it throws
  }
  // Each tensor was prepared (finite scan, norms, row clip) by check_and_keep: folded as kept.
  if (!state_->private_sum) {
    for (SparseSumAccumulator& acc : state_->accumulators) {
      acc.add_kept(file.tensors.at(acc.name()));
    }
  }
  ++state_->num_reports;
  state_->total_weight += weight;
  if (capped) ++state_->num_capped;
  state_->claims.push_back(claimed);
}

std::uint64_t RoundAggregator::folded_examples(std::uint64_t claimed) const {
  const std::uint64_t cap = state_->max_examples_per_report;
  return cap != 0 && claimed > cap ? cap : claimed;
}

void RoundAggregator::merge(const RoundAggregator& other) {
  if (&other == this) {
    const RoundAggregator copy = other;  // NOLINT(performance-unnecessary-copy-initialization)
    merge(copy);
    return;
  }
  refuse_if_private("merge");
  other.refuse_if_private("merge");
  const State& theirs = *other.state_;
  State& ours = *state_;
  const bool same_plan =
      theirs.accumulators.size() == ours.accumulators.size() &&
      std::equal(ours.accumulators.begin(), ours.accumulators.end(), theirs.accumulators.begin(),
                 [](const SparseSumAccumulator& a, const SparseSumAccumulator& b) {
                   return a.name() == b.name() && a.spec() == b.spec() &&
                          a.encoding() == b.encoding() && a.dtype() == b.dtype() &&
                          a.dense_shape() == b.dense_shape();
                 });
  if (!same_plan || theirs.max_examples_per_report != ours.max_examples_per_report) {
    throw InvalidInput("merge of round aggregators: the plans' updates differ");
  }
  if (!(theirs.model == ours.model)) {
    throw InvalidInput("merge of round aggregators: the global models differ");
  }
  for (std::size_t i = 0; i < ours.accumulators.size(); ++i) {
    ours.accumulators[i].merge(theirs.accumulators[i]);
  }
  ours.num_reports += theirs.num_reports;
  ours.total_weight += theirs.total_weight;
  ours.num_capped += theirs.num_capped;
  ours.claims.insert(ours.claims.end(), theirs.claims.begin(), theirs.claims.end());
  ours.claims_known = ours.claims_known && theirs.claims_known;
}

std::size_t RoundAggregator::num_reports() const { return state_->num_reports; }

RoundStats RoundAggregator::stats() const {
  RoundStats stats;
  stats.num_reports = state_->num_reports;
  stats.num_capped = state_->num_capped;
  stats.example_cap = state_->max_examples_per_report;
  stats.median_claim = state_->claims_known ? median_claim(state_->claims) : 0;
  // A private round's operators and their robust rules never ran: no per-tensor counts or bounds.
  if (state_->private_sum) return stats;
  for (const SparseSumAccumulator& acc : state_->accumulators) {
    stats.clipped_per_tensor.emplace_back(acc.name(), acc.num_clipped());
    if (acc.spec().clip.kind != ClipKind::kOff) {
      stats.clip_bound_per_tensor.emplace_back(acc.name(), acc.spec().clip.bound);
    }
    stats.withheld_per_tensor.emplace_back(acc.name(), acc.num_withheld());
    if (acc.spec().row_clip > 0.0) {
      stats.rows_clipped_per_tensor.emplace_back(acc.name(), acc.num_rows_clipped());
    }
  }
  return stats;
}
double RoundAggregator::total_weight() const { return state_->total_weight; }

std::vector<TensorAggregate> RoundAggregator::aggregates() const {
  refuse_if_private("aggregates");
  std::vector<TensorAggregate> out;
  out.reserve(state_->accumulators.size());
  for (const SparseSumAccumulator& acc : state_->accumulators) {
    TensorAggregate a;
    a.name = acc.name();
    a.encoding = acc.encoding();
    a.delta = acc.finalize();
    a.counts = operator_rules(acc.spec().op).finalizes_to_counts(acc.encoding());
    // No report at all carries no information either: nothing moves, not even by momentum.
    a.withheld = acc.encoding() == UpdateEncoding::kDense &&
                 (acc.num_updates() == 0 || acc.num_withheld() > 0);
    out.push_back(std::move(a));
  }
  return out;
}

const NamedTensors& RoundAggregator::model() const { return state_->model; }

}  // namespace fedleaf::core
