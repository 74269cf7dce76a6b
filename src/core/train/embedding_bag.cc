#include "core/train/embedding_bag.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/train/dense_kernels.h"

namespace fedleaf::core {
namespace {

constexpr std::uint32_t kNoSlot = std::numeric_limits<std::uint32_t>::max();

}  // namespace

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
      // dim 1 (a linear model over hashed features) is the common case of tiny rows: a call per
      // id would cost more than the arithmetic.
      if (dim_ == 1) {
        row[0] += w * table_[id];
      } else {
        kernels::axpy(dim_, w, table_ + static_cast<std::size_t>(id) * dim_, row);
      }
      abs_sum += std::fabs(w);
      square_sum += w * w;
    }
    float scale = 1.0f;
    if (combiner_ == Combiner::kMean) scale = abs_sum > 0.0f ? 1.0f / abs_sum : 0.0f;
    if (combiner_ == Combiner::kSqrtn)
      scale = square_sum > 0.0f ? 1.0f / std::sqrt(square_sum) : 0.0f;
    if (scale != 1.0f) kernels::scale(dim_, scale, row);
    scales_[b] = scale;
  }
}

void EmbeddingBag::backward(const Batch& batch, const float* grad_out,
                            ParameterGradient& gradient) {
  const std::uint32_t nnz = batch.offsets[batch.size];
  // A small open-addressing table (row → slot, linear probing, at most half full) stays in L1
  // cache, where a table-sized map would miss on nearly every id of a large vocabulary.
  std::size_t capacity = 16;
  while (capacity < 2 * static_cast<std::size_t>(nnz)) capacity *= 2;
  if (probe_rows_.size() < capacity) {
    probe_rows_.assign(capacity, kNoSlot);
    probe_slots_.resize(capacity);
  }
  const std::size_t mask = capacity - 1;
  int shift = 32;
  for (std::size_t c = capacity; c > 1; c /= 2) --shift;
  slot_of_.resize(nnz);
  std::vector<std::uint32_t>& touched = gradient.touched_rows;
  touched.clear();
  for (std::uint32_t j = 0; j < nnz; ++j) {
    const std::uint32_t id = batch.ids[j];
    std::size_t h = static_cast<std::uint32_t>(id * 2654435761u) >> shift;
    while (probe_rows_[h] != id && probe_rows_[h] != kNoSlot) h = (h + 1) & mask;
    if (probe_rows_[h] == kNoSlot) {
      probe_rows_[h] = id;
      probe_slots_[h] = static_cast<std::uint32_t>(touched.size());
      touched.push_back(id);
    }
    slot_of_[j] = probe_slots_[h];
  }
  std::fill(probe_rows_.begin(), probe_rows_.begin() + static_cast<std::ptrdiff_t>(capacity),
            kNoSlot);
  gradient.values.assign(touched.size() * dim_, 0.0f);
  float* values = gradient.values.data();
  for (std::size_t b = 0; b < batch.size; ++b) {
    const float* g = grad_out + b * dim_;
    for (std::uint32_t j = batch.offsets[b]; j < batch.offsets[b + 1]; ++j) {
      const float w = (batch.weights ? batch.weights[j] : 1.0f) * scales_[b];
      if (w == 0.0f) continue;
      if (dim_ == 1) {
        values[slot_of_[j]] += w * g[0];
      } else {
        kernels::axpy(dim_, w, g, values + static_cast<std::size_t>(slot_of_[j]) * dim_);
      }
    }
  }
}

}  // namespace fedleaf::core
