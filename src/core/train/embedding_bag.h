// The embedding_bag layer: per example, a combined (sum / mean / sqrtn) weighted sum of table
// rows selected by sparse ids. Its gradient is row-sparse: only the rows a batch touched.
//
//   EmbeddingBag emb("emb", table, vocab, dim, Combiner::kMean);
//   emb.forward(batch, out);                     // out [batch.size, dim]
//   emb.backward(batch, grad_out, gradient);     // gradient.touched_rows unique
//
// out[b] = c_b Σ_j w_j table[id_j] with c_b = 1 (sum), 1/Σ_j|w_j| (mean), 1/sqrt(Σ_j w_j²)
// (sqrtn), and 0 for an example without ids or with all weights 0. The table is borrowed and
// must outlive the layer; the optimizer may change its values between batches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/train/batch.h"
#include "core/train/parameter_gradient.h"
#include "core/train/plan.h"

namespace fedleaf::core {

class EmbeddingBag {
 public:
  EmbeddingBag(std::string name, const float* table, std::size_t rows, std::size_t dim,
               Combiner combiner);

  std::size_t dim() const { return dim_; }
  // Throws InvalidInput naming the layer when an id is >= rows.
  void forward(const Batch& batch, float* out);
  // Uses the combiner scales of the last forward() of the same batch (throws InvalidInput
  // otherwise). gradient.touched_rows lists each row the batch touched once, in order of first
  // occurrence in batch.ids (not sorted: sorting a batch's ids would cost more than the rest of a
  // sparse step). Each row's gradient accumulates in example order, so results are
  // deterministic. The first call allocates one uint32 per table row (1/dim of the table); later
  // calls allocate only when a batch has more ids than every earlier one.
  void backward(const Batch& batch, const float* grad_out, ParameterGradient& gradient);

 private:
  std::string name_;
  const float* table_;
  std::size_t rows_;
  std::size_t dim_;
  Combiner combiner_;
  std::vector<float> scales_;                   // c_b of the last forward
  const std::uint32_t* forward_ids_ = nullptr;  // the ids and count of the last forward
  std::uint32_t forward_nnz_ = 0;
  // Table row → index into touched_rows during backward; every entry is kNoSlot between calls.
  std::vector<std::uint32_t> slot_of_row_;
  std::vector<std::uint32_t> slot_of_;  // nonzero position → index into touched_rows
};

}  // namespace fedleaf::core
