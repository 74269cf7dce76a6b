#include "core/aggregation/round_aggregator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/aggregation/adaptive_example_cap.h"
#include "core/aggregation/sparse_sum_accumulator.h"
#include "core/error.h"
#include "core/tensor/linear_index.h"
#include "core/text/text_format.h"
#include "core/wire/result_format.h"
#include "core/wire/safetensors.h"
#include "core/wire/safetensors_index.h"

namespace fedleaf::core {
namespace {

// v2 added per-key report counts (min_contributors). A v1 checkpoint still restores: its round
// finishes under the rules it started with, without the threshold (it has no counts), and the
// next round applies the plan's min_contributors.
constexpr const char* kCheckpointFormat = "fedleaf.round_aggregator.v2";
constexpr const char* kCheckpointFormatV1 = "fedleaf.round_aggregator.v1";
constexpr std::uint64_t kMaxExactWeight = std::uint64_t{1} << 53;

// A decimal integer in [1, 2^53] (so it is exact as a double weight).
std::uint64_t parse_positive_integer(const std::string& text, const std::string& what) {
  const bool digits =
      !text.empty() && text.size() <= 16 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const std::uint64_t value = digits ? std::stoull(text) : 0;
  if (!digits || value == 0 || value > kMaxExactWeight) {
    throw InvalidInput(what + " " + in_quotes(text) + " must be an integer in [1, 2^53]");
  }
  return value;
}

std::uint64_t parse_report_count(const std::string& text, const std::string& what) {
  if (text == "0") return 0;
  return parse_positive_integer(text, what);
}

double parse_weight_total(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0.0) {
    throw InvalidInput(what + " " + in_quotes(text) + " must be a finite number >= 0");
  }
  return v;
}

// Claims as checkpoint metadata: decimal integers joined by ',' ("" for none).
std::string join_claims(const std::vector<std::uint64_t>& claims) {
  std::string out;
  for (std::uint64_t c : claims) {
    if (!out.empty()) out += ',';
    out += std::to_string(c);
  }
  return out;
}

std::vector<std::uint64_t> parse_claims(const std::string& text, const std::string& what) {
  std::vector<std::uint64_t> claims;
  if (text.empty()) return claims;
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    const std::size_t length = comma == std::string::npos ? std::string::npos : comma - start;
    claims.push_back(parse_positive_integer(text.substr(start, length), what));
    if (comma == std::string::npos) return claims;
    start = comma + 1;
  }
}

const std::string& metadata_value(const Metadata& metadata, const std::string& key,
                                  const std::string& where) {
  const auto it = metadata.find(key);
  if (it == metadata.end())
    throw InvalidInput(where + ": metadata " + in_quotes(key) + " is missing");
  return it->second;
}

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

// target[at] += value, in f64, rounded once to the target's dtype. An element whose new value
// would not be finite in that dtype (an overflowing sum, or a delta that is already infinite)
// keeps its old value: a published model is always finite. Returns whether it was kept so.
template <class T, class D>
bool add_one(T* target, std::size_t at, D value) {
  const double sum = static_cast<double>(target[at]) + static_cast<double>(value);
  if (std::isfinite(sum) && std::abs(sum) <= static_cast<double>(std::numeric_limits<T>::max())) {
    target[at] = static_cast<T>(sum);
    return false;
  }
  return true;
}

// target += delta (add_one per element). Returns how many elements kept their old value.
template <class T, class D>
std::uint64_t add_delta(T* target, const Tensor& delta, const std::vector<std::uint64_t>& strides) {
  std::uint64_t withheld = 0;
  const auto add = [&](std::size_t at, D value) { withheld += add_one(target, at, value) ? 1 : 0; };
  if (const auto* dense = std::get_if<DenseTensor>(&delta)) {
    const D* v = dense->data<D>();
    for (std::size_t i = 0; i < dense->size(); ++i) add(i, v[i]);
  } else if (const auto* coo = std::get_if<SparseTensor>(&delta)) {
    const D* v = coo->values().data<D>();
    for (std::size_t e = 0; e < coo->nnz(); ++e) {
      add(static_cast<std::size_t>(linear_index(coo->indices(), e, strides)), v[e]);
    }
  } else {
    const auto& rows = std::get<RowSparseTensor>(delta);
    const D* v = rows.values().data<D>();
    const std::size_t width = rows.row_size();
    for (std::size_t e = 0; e < rows.num_rows(); ++e) {
      const auto row = static_cast<std::size_t>(rows.indices()(e));
      for (std::size_t j = 0; j < width; ++j) add(row * width + j, v[e * width + j]);
    }
  }
  return withheld;
}

// target += the row_sparse accumulator's finalized rows, as add_delta adds finalize()'s tensor
// (the same values, the same rounding), without building that tensor.
template <class T>
std::uint64_t add_finalized_rows(T* target, const SparseSumAccumulator& acc) {
  std::uint64_t withheld = 0;
  std::size_t width = 1;
  for (std::size_t d = 1; d < acc.dense_shape().size(); ++d) {
    width *= static_cast<std::size_t>(acc.dense_shape()[d]);
  }
  acc.for_each_finalized_row([&](std::uint64_t row, const void* values) {
    const T* v = static_cast<const T*>(values);
    T* at = target + static_cast<std::size_t>(row) * width;
    for (std::size_t j = 0; j < width; ++j) withheld += add_one(at, j, v[j]) ? 1 : 0;
  });
  return withheld;
}

}  // namespace

class RoundAggregator::State {
 public:
  NamedTensors model;
  std::vector<SparseSumAccumulator> accumulators;  // one per tensor in "updates", by name
  std::size_t num_reports = 0;
  double total_weight = 0.0;
  std::uint64_t max_examples_per_report = 0;  // 0: no cap
  std::uint64_t num_capped = 0;
  // Every report's num_examples as claimed (uncapped), in fold order: the adaptive cap's median.
  // claims_known is false for a round restored from a checkpoint written before claims were kept.
  std::vector<std::uint64_t> claims;
  bool claims_known = true;
};

RoundAggregator::RoundAggregator(const UpdatePlan& plan, NamedTensors model,
                                 std::size_t expected_reports)
    : state_(std::make_unique<State>()) {
  AccumulatorOptions options;
  options.expected_updates = expected_reports;
  state_->accumulators = accumulators_from_plan(plan, model, options);
  state_->max_examples_per_report = plan.max_examples_per_report;
  state_->model = std::move(model);
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
  add_result(data, size, read_result_header(data, size, ResultKind::kTrain), weight_scale);
}

void RoundAggregator::add_result(const std::uint8_t* data, std::size_t size,
                                 const ResultHeader& header, double weight_scale) {
  if (!(weight_scale > 0.0 && weight_scale <= 1.0)) {
    throw InvalidInput("train result: weight scale must be in (0, 1], got " +
                       format_double_exact(weight_scale));
  }
  const std::uint64_t claimed = header.num_examples;
  SafetensorsReadOptions options;
  options.require_finite = true;
  const SafetensorsFile file = read_safetensors(data, size, options);
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
    acc.check_and_keep(it->second, weight);
  }
  // Each tensor was prepared (finite scan, norms, row clip) by check_and_keep: folded as kept.
  for (SparseSumAccumulator& acc : state_->accumulators) {
    acc.add_kept(file.tensors.at(acc.name()));
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

namespace {

// next += every accumulator's finalized delta (next_model's rule); returns the elements kept at
// their old value because the new one would not be finite.
std::uint64_t add_aggregates(NamedTensors& next,
                             const std::vector<SparseSumAccumulator>& accumulators) {
  std::uint64_t withheld = 0;
  for (const SparseSumAccumulator& acc : accumulators) {
    DenseTensor& target = std::get<DenseTensor>(next.at(acc.name()));
    const bool counts = operator_rules(acc.spec().op).finalizes_to_counts(acc.encoding());
    if (acc.encoding() == UpdateEncoding::kRowSparse && !counts) {
      withheld += acc.dtype() == DType::F32 ? add_finalized_rows(target.data<float>(), acc)
                                            : add_finalized_rows(target.data<double>(), acc);
      continue;
    }
    const Tensor delta = acc.finalize();
    const std::vector<std::uint64_t> strides = *row_major_strides(acc.dense_shape());
    const auto apply = [&](auto target_tag) {
      using T = decltype(target_tag);
      T* t = target.data<T>();
      if (counts) {
        withheld += add_delta<T, std::int64_t>(t, delta, strides);
      } else {
        withheld += add_delta<T, T>(t, delta, strides);
      }
    };
    if (acc.dtype() == DType::F32) {
      apply(float{});
    } else {
      apply(double{});
    }
  }
  return withheld;
}

}  // namespace

NamedTensors RoundAggregator::next_model(std::uint64_t* withheld_nonfinite) const {
  NamedTensors next = state_->model;
  const std::uint64_t withheld = add_aggregates(next, state_->accumulators);
  if (withheld_nonfinite) *withheld_nonfinite = withheld;
  return next;
}

NamedTensors RoundAggregator::take_next_model(std::uint64_t* withheld_nonfinite) {
  NamedTensors next = std::move(state_->model);
  state_->model.clear();  // a moved-from map is valid but unspecified: make it empty
  const std::uint64_t withheld = add_aggregates(next, state_->accumulators);
  if (withheld_nonfinite) *withheld_nonfinite = withheld;
  return next;
}

std::vector<TensorAggregate> RoundAggregator::aggregates() const {
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

std::vector<std::uint8_t> RoundAggregator::checkpoint() const {
  NamedTensors tensors;
  Metadata metadata{{"format", kCheckpointFormat},
                    {"num_reports", std::to_string(state_->num_reports)},
                    {"total_weight", format_double_exact(state_->total_weight)},
                    {"num_capped", std::to_string(state_->num_capped)}};
  if (state_->claims_known) metadata.emplace("claims", join_claims(state_->claims));
  for (const SparseSumAccumulator& acc : state_->accumulators) {
    acc.save(acc.name(), tensors, metadata);
  }
  return write_safetensors(tensors, metadata);
}

RoundAggregator RoundAggregator::restore(const UpdatePlan& plan, NamedTensors model,
                                         const std::uint8_t* data, std::size_t size) {
  RoundAggregator round(plan, std::move(model));
  SafetensorsReadOptions options;
  options.require_finite = true;
  const SafetensorsFile file = read_safetensors(data, size, options);
  const std::string where = "round checkpoint";
  const std::string& format = metadata_value(file.metadata, "format", where);
  const bool v1 = format == kCheckpointFormatV1;
  if (format != kCheckpointFormat && !v1) {
    throw InvalidInput(where + ": format " + in_quotes(format) + " is not " +
                       in_quotes(kCheckpointFormat) + " (nor the older " +
                       in_quotes(kCheckpointFormatV1) + ")");
  }
  const std::uint64_t reports = parse_report_count(
      metadata_value(file.metadata, "num_reports", where), where + ": num_reports");
  if (reports > std::numeric_limits<std::size_t>::max()) {
    throw InvalidInput(where + ": num_reports " + std::to_string(reports) +
                       " exceeds what this platform's size_t counts");
  }
  const double total = parse_weight_total(metadata_value(file.metadata, "total_weight", where),
                                          where + ": total_weight");
  std::vector<SparseSumAccumulator>& accumulators = round.state_->accumulators;
  for (const auto& [name, tensor] : file.tensors) {
    const bool known = std::any_of(
        accumulators.begin(), accumulators.end(), [&n = name](const SparseSumAccumulator& a) {
          return n == a.name() + "@keys" || n == a.name() + "@sums" ||
                 n == a.name() + "@contributors" || n == a.name() + "@reports";
        });
    if (!known) {
      throw InvalidInput(where + ": tensor " + in_quotes(name) +
                         " belongs to no accumulator of the plan");
    }
  }
  for (SparseSumAccumulator& planned : accumulators) {
    SparseSumAccumulator loaded =
        SparseSumAccumulator::load(planned.name(), file.tensors, file.metadata);
    const std::string what = where + ": accumulator " + in_quotes(planned.name());
    OperatorSpec expected = planned.spec();
    if (v1) expected.min_contributors = 0;  // v1 kept no report counts
    // A round checkpointed before row clipping finishes without it (as it started).
    if (loaded.spec().row_clip == 0.0) expected.row_clip = 0.0;
    if (loaded.spec() != expected || loaded.encoding() != planned.encoding() ||
        loaded.dtype() != planned.dtype() || loaded.dense_shape() != planned.dense_shape()) {
      throw InvalidInput(what + " was saved for " + std::string(operator_name(loaded.spec().op)) +
                         " of a " + std::string(update_encoding_name(loaded.encoding())) + " " +
                         std::string(dtype_name(loaded.dtype())) + " tensor of dense_shape " +
                         shape_to_string(loaded.dense_shape()) + ", which the plan does not say");
    }
    if (loaded.num_updates() != reports || loaded.total_weight() != total) {
      throw InvalidInput(what + " holds " + std::to_string(loaded.num_updates()) +
                         " updates of total weight " + format_double_exact(loaded.total_weight()) +
                         ", but the round has " + std::to_string(reports) + " of " +
                         format_double_exact(total));
    }
    planned = std::move(loaded);
  }
  // Checkpoints written before the weight cap carry no num_capped: none was capped.
  const auto capped = file.metadata.find("num_capped");
  const std::uint64_t num_capped = capped == file.metadata.end()
                                       ? 0
                                       : parse_report_count(capped->second, where + ": num_capped");
  if (num_capped > reports) {
    throw InvalidInput(where + ": num_capped " + std::to_string(num_capped) +
                       " exceeds num_reports " + std::to_string(reports));
  }
  round.state_->num_capped = num_capped;
  // Checkpoints written before claims were kept carry none: the round's median is then unknown.
  const auto claims = file.metadata.find("claims");
  round.state_->claims_known = claims != file.metadata.end();
  if (round.state_->claims_known) {
    round.state_->claims = parse_claims(claims->second, where + ": claims");
    if (round.state_->claims.size() != reports) {
      throw InvalidInput(where + ": claims lists " + std::to_string(round.state_->claims.size()) +
                         " reports' num_examples, but the round has " + std::to_string(reports));
    }
  }
  round.state_->num_reports = static_cast<std::size_t>(reports);
  round.state_->total_weight = total;
  return round;
}

ClipBounds RoundAggregator::checkpoint_clip_bounds(const std::uint8_t* data, std::size_t size) {
  const SafetensorsIndex index = index_safetensors(data, size);
  constexpr std::string_view kSuffix = "@clip";
  ClipBounds bounds;
  for (const auto& [key, value] : index.metadata) {
    if (key.size() <= kSuffix.size() ||
        key.compare(key.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
      continue;
    }
    const std::size_t colon = value.find(':');
    const std::string kind = value.substr(0, colon);
    if (colon == std::string::npos || (kind != "norm" && kind != "rms")) {
      throw InvalidInput("round checkpoint: " + in_quotes(key) + " " + in_quotes(value) +
                         " is not \"norm:<bound>\" or \"rms:<bound>\"");
    }
    bounds.emplace_back(key.substr(0, key.size() - kSuffix.size()),
                        parse_weight_total(value.substr(colon + 1), "round checkpoint: " + key));
  }
  return bounds;
}

}  // namespace fedleaf::core
