// SparseSumAccumulator::finalize: the operator's finalize rule applied to every touched key, in
// key order, in one pass.
#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "core/aggregation/accumulator/for_each_touched.h"
#include "core/text/text_format.h"

namespace fedleaf::core {

Tensor SparseSumAccumulator::finalize() const {
  const FinalizeRule rule = operator_rules(spec_.op).finalize_rule(encoding_);
  const std::size_t w = width_;
  const double* sums = sums_.data();
  const double* contributors = contributors_.data();
  // With no updates every sum is zero, and zero divided by one is the zero the result needs.
  const double total = total_weight_ > 0.0 ? total_weight_ : 1.0;
  const std::uint64_t updates = num_updates_;
  // One pass over the touched keys writes indices and values; T and R are fixed per loop.
  const auto build = [&](auto tag, auto rule_constant) -> Tensor {
    using T = decltype(tag);
    constexpr FinalizeRule kRule = decltype(rule_constant)::value;
    const auto write_row = [&](T* dst, std::size_t pos) {
      const double* in = sums + pos * w;
      if constexpr (kRule == FinalizeRule::kSums) {
        for (std::size_t j = 0; j < w; ++j) dst[j] = static_cast<T>(in[j]);
      } else if constexpr (kRule == FinalizeRule::kSumsOverTotal) {
        for (std::size_t j = 0; j < w; ++j) dst[j] = static_cast<T>(in[j] / total);
      } else if constexpr (kRule == FinalizeRule::kSumsOverContributors) {
        const double divisor = contributors[pos];
        for (std::size_t j = 0; j < w; ++j) dst[j] = static_cast<T>(in[j] / divisor);
      } else if constexpr (kRule == FinalizeRule::kContributors) {
        std::fill_n(dst, w, static_cast<T>(contributors[pos]));
      } else {
        std::fill_n(dst, w, static_cast<T>(updates));
      }
    };
    if (encoding_ == UpdateEncoding::kDense) {
      xt::xarray<T> out =
          xt::xarray<T>::from_shape(Shape(dense_shape_.begin(), dense_shape_.end()));
      T* dst = out.data();
      const auto n = static_cast<std::size_t>(num_keys_);  // checked by the constructor
      if (num_withheld() > 0) {
        std::fill_n(dst, n, T{0});  // too few reports: every key keeps its value
      } else {
        for (std::size_t k = 0; k < n; ++k) write_row(dst + k, k);
      }
      return DenseTensor(std::move(out));
    }
    // Touched keys are in memory, so their count fits size_t.
    const auto n = static_cast<std::size_t>(num_touched() - num_withheld());
    Shape value_shape{n};
    for (std::size_t d = 1; encoding_ == UpdateEncoding::kRowSparse && d < dense_shape_.size();
         ++d) {
      value_shape.push_back(static_cast<std::size_t>(dense_shape_[d]));
    }
    xt::xarray<T> values = xt::xarray<T>::from_shape(value_shape);
    T* dst = values.data();
    const bool coo = encoding_ == UpdateEncoding::kCoo;
    const std::size_t rank = coo ? dense_shape_.size() : 1;
    CooIndices coo_indices = CooIndices::from_shape({coo ? n : 0, rank});
    RowIndices row_indices = RowIndices::from_shape({coo ? 0 : n});
    std::int64_t* idx = coo ? coo_indices.data() : row_indices.data();
    std::size_t e = 0;
    for_each_touched([&](std::uint64_t key, std::size_t pos) {
      if (!kept(pos)) return;
      if (rank == 1) {
        idx[e] = static_cast<std::int64_t>(key);
      } else {
        std::uint64_t rest = key;
        for (std::size_t d = 0; d < rank; ++d) {
          idx[e * rank + d] = static_cast<std::int64_t>(rest / strides_[d]);
          rest %= strides_[d];
        }
      }
      write_row(dst + e * w, pos);
      ++e;
    });
    if (coo) {
      return SparseTensor(std::move(coo_indices), DenseTensor(std::move(values)), dense_shape_,
                          "aggregate " + in_quotes(name_));
    }
    return RowSparseTensor(std::move(row_indices), DenseTensor(std::move(values)), dense_shape_,
                           "aggregate " + in_quotes(name_));
  };
  if (operator_rules(spec_.op).finalizes_to_counts(encoding_)) {  // I64 counts
    return rule == FinalizeRule::kUpdates
               ? build(std::int64_t{},
                       std::integral_constant<FinalizeRule, FinalizeRule::kUpdates>{})
               : build(std::int64_t{},
                       std::integral_constant<FinalizeRule, FinalizeRule::kContributors>{});
  }
  const auto with_rule = [&](auto tag) -> Tensor {
    switch (rule) {
      case FinalizeRule::kSums:
        return build(tag, std::integral_constant<FinalizeRule, FinalizeRule::kSums>{});
      case FinalizeRule::kSumsOverContributors:
        return build(tag,
                     std::integral_constant<FinalizeRule, FinalizeRule::kSumsOverContributors>{});
      default:
        return build(tag, std::integral_constant<FinalizeRule, FinalizeRule::kSumsOverTotal>{});
    }
  };
  return dtype_ == DType::F64 ? with_rule(double{}) : with_rule(float{});
}

void SparseSumAccumulator::for_each_finalized_row(
    const std::function<void(std::uint64_t row, const void* values)>& visit) const {
  if (encoding_ != UpdateEncoding::kRowSparse ||
      operator_rules(spec_.op).finalizes_to_counts(encoding_)) {
    throw std::logic_error("for_each_finalized_row: a row_sparse accumulator of values only");
  }
  // finalize()'s rules for values (its with_rule: any other rule divides by the total).
  const FinalizeRule rule = operator_rules(spec_.op).finalize_rule(encoding_);
  const std::size_t w = width_;
  const double* sums = sums_.data();
  const double* contributors = contributors_.data();
  const double total = total_weight_ > 0.0 ? total_weight_ : 1.0;
  const auto run = [&](auto tag, auto rule_constant) {
    using T = decltype(tag);
    constexpr FinalizeRule kRule = decltype(rule_constant)::value;
    std::vector<T> row(w);
    T* dst = row.data();
    for_each_touched([&](std::uint64_t key, std::size_t pos) {
      if (!kept(pos)) return;
      const double* in = sums + pos * w;
      if constexpr (kRule == FinalizeRule::kSums) {
        for (std::size_t j = 0; j < w; ++j) dst[j] = static_cast<T>(in[j]);
      } else if constexpr (kRule == FinalizeRule::kSumsOverContributors) {
        const double divisor = contributors[pos];
        for (std::size_t j = 0; j < w; ++j) dst[j] = static_cast<T>(in[j] / divisor);
      } else {
        for (std::size_t j = 0; j < w; ++j) dst[j] = static_cast<T>(in[j] / total);
      }
      visit(key, dst);
    });
  };
  const auto with_rule = [&](auto tag) {
    switch (rule) {
      case FinalizeRule::kSums:
        return run(tag, std::integral_constant<FinalizeRule, FinalizeRule::kSums>{});
      case FinalizeRule::kSumsOverContributors:
        return run(tag,
                   std::integral_constant<FinalizeRule, FinalizeRule::kSumsOverContributors>{});
      default:
        return run(tag, std::integral_constant<FinalizeRule, FinalizeRule::kSumsOverTotal>{});
    }
  };
  if (dtype_ == DType::F64) {
    with_rule(double{});
  } else {
    with_rule(float{});
  }
}

}  // namespace fedleaf::core
