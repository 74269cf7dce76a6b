// RoundAggregator::next_model and take_next_model: the round's model plus every accumulator's
// aggregate, rounded once per element and always finite.
#include <cmath>
#include <limits>

#include "core/aggregation/accumulator/sparse_sum_accumulator.h"
#include "core/aggregation/operators/operator_table.h"
#include "core/aggregation/round/round_aggregator.h"
#include "core/aggregation/round/round_state.h"
#include "core/tensor/linear_index.h"

namespace fedleaf::core {
namespace {

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
  refuse_if_private("next_model");
  NamedTensors next = state_->model;
  const std::uint64_t withheld = add_aggregates(next, state_->accumulators);
  if (withheld_nonfinite) *withheld_nonfinite = withheld;
  return next;
}

NamedTensors RoundAggregator::take_next_model(std::uint64_t* withheld_nonfinite) {
  refuse_if_private("take_next_model");
  NamedTensors next = std::move(state_->model);
  state_->model.clear();  // a moved-from map is valid but unspecified: make it empty
  const std::uint64_t withheld = add_aggregates(next, state_->accumulators);
  if (withheld_nonfinite) *withheld_nonfinite = withheld;
  return next;
}

}  // namespace fedleaf::core
