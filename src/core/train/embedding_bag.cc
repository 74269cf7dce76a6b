#include "core/train/embedding_bag.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/train/dense_kernels.h"

namespace fedleaf::core {

EmbeddingBag::EmbeddingBag(std::string name, const float* table, std::size_t rows, std::size_t dim,
                           Combiner combiner)
    : name_(std::move(name)), table_(table), rows_(rows), dim_(dim), combiner_(combiner) {}

void EmbeddingBag::forward(const Batch& batch, float* out) {
  scales_.resize(batch.size);
  for (std::size_t b = 0; b < batch.size; ++b) {
    float* row = out + b * dim_;
    std::fill(row, row + dim_, 0.0f);
    float abs_sum = 0.0f;
    float square_sum = 0.0f;
    for (std::uint32_t j = batch.offsets[b]; j < batch.offsets[b + 1]; ++j) {
      const std::uint32_t id = batch.ids[j];
      if (id >= rows_) {
        throw InvalidInput("embedding_bag '" + name_ + "': id " + std::to_string(id) +
                           " is not below the table's " + std::to_string(rows_) + " rows");
      }
      const float w = batch.weights ? batch.weights[j] : 1.0f;
      kernels::axpy(dim_, w, table_ + static_cast<std::size_t>(id) * dim_, row);
      abs_sum += std::fabs(w);
      square_sum += w * w;
    }
    float scale = 1.0f;
    if (combiner_ == Combiner::kMean) scale = abs_sum > 0.0f ? 1.0f / abs_sum : 0.0f;
    if (combiner_ == Combiner::kSqrtn)
      scale = square_sum > 0.0f ? 1.0f / std::sqrt(square_sum) : 0.0f;
    if (scale != 1.0f) {
      for (std::size_t k = 0; k < dim_; ++k) row[k] *= scale;
    }
    scales_[b] = scale;
  }
}

void EmbeddingBag::backward(const Batch& batch, const float* grad_out,
                            ParameterGradient& gradient) {
  const std::uint32_t nnz = batch.offsets[batch.size];
  keys_.resize(nnz);
  for (std::uint32_t j = 0; j < nnz; ++j) {
    keys_[j] = (static_cast<std::uint64_t>(batch.ids[j]) << 32) | j;
  }
  std::sort(keys_.begin(), keys_.end());
  slot_of_.resize(nnz);
  gradient.touched_rows.clear();
  for (std::uint32_t k = 0; k < nnz; ++k) {
    const auto id = static_cast<std::uint32_t>(keys_[k] >> 32);
    if (gradient.touched_rows.empty() || gradient.touched_rows.back() != id) {
      gradient.touched_rows.push_back(id);
    }
    slot_of_[static_cast<std::uint32_t>(keys_[k])] =
        static_cast<std::uint32_t>(gradient.touched_rows.size() - 1);
  }
  gradient.values.assign(gradient.touched_rows.size() * dim_, 0.0f);
  for (std::size_t b = 0; b < batch.size; ++b) {
    const float* g = grad_out + b * dim_;
    for (std::uint32_t j = batch.offsets[b]; j < batch.offsets[b + 1]; ++j) {
      const float w = (batch.weights ? batch.weights[j] : 1.0f) * scales_[b];
      if (w != 0.0f) kernels::axpy(dim_, w, g, gradient.values.data() + slot_of_[j] * dim_);
    }
  }
}

}  // namespace fedleaf::core
