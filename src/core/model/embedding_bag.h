// The embedding_bag layer: per example, a combined (sum / mean / sqrtn) weighted sum of table
// rows selected by sparse ids. Its gradient is row-sparse: only the rows a batch touched.
//
//   EmbeddingBag emb("emb", table, vocab, dim, Combiner::kMean);
//   emb.forward(batch, out);                     // out [batch.size, dim]
//   emb.backward(batch, grad_out, gradient);     // gradient.touched_rows unique
//   emb.backward_sgd(batch, grad_out, 0.1f);     // or: the SGD step straight into the table
//
// out[b] = c_b Σ_j w_j table[id_j] (+ bias) with c_b = 1 (sum), 1/Σ_j|w_j| (mean),
// 1/sqrt(Σ_j w_j²) (sqrtn), and 0 (+ bias) for an example without ids or with all weights 0. The
// optional bias (a Keras Dense reading a sparse input: x W + b) is added to every example's
// output, as Keras adds it to a row with no entries. The table and bias are borrowed and must
// outlive the layer; the optimizer (or backward_sgd) may change their values between batches.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/data/batch.h"
#include "core/data/batch_rows.h"
#include "core/model/layer_kind.h"
#include "core/model/model_spec.h"
#include "core/model/parameter_gradient.h"

namespace fedleaf::core {

// The "embedding_bag" entry of the layer table (layer_kind.h). Fields: vocab, dim, combiner
// (default mean), initializer (default uniform), init_scale (default 0.05), use_bias (default
// false), or "table": an earlier embedding_bag owning a table, whose table this layer looks up too
// (vocab and dim then optional and equal to the table's; no parameter of its own, so no
// use_bias). Reads a sparse_ids input. Declares "<name>/weight" [vocab, dim] with a row-sparse
// gradient (a table owner only), then "<name>/bias" [dim] (zeros, a dense gradient) with
// use_bias.
// The fields of an embedding_bag layer (its own table, or "table": another's) and its choices.
enum class Combiner { kSum, kMean, kSqrtn };
inline constexpr std::array kEmbeddingBagFields{"type",        "name",      "input", "vocab",
                                                "dim",         "combiner",  "table", "use_bias",
                                                "initializer", "init_scale"};
inline constexpr std::array kCombiners{std::pair{"sum", Combiner::kSum},
                                       std::pair{"mean", Combiner::kMean},
                                       std::pair{"sqrtn", Combiner::kSqrtn}};
inline constexpr std::array kEmbeddingInitializers{std::pair{"uniform", Initializer::kUniform},
                                                   std::pair{"zeros", Initializer::kZeros}};
inline constexpr std::array kEmbeddingBagChoices{
    LayerChoice{"combiner", choice_names_of<kCombiners>},
    LayerChoice{"initializer", choice_names_of<kEmbeddingInitializers>}};

// What parse_embedding_bag_spec read: a table owner's fields, or a lookup of `table`'s (vocab and
// dim then the owner's). The spec's owned_table is the owner's "<name>/weight"; its table_layer
// the owner (itself for an owner).
struct EmbeddingBagConfig : LayerConfig {
  std::size_t vocab = 0;
  std::size_t dim = 0;
  Combiner combiner = Combiner::kMean;
  bool use_bias = false;
  Initializer initializer = Initializer::kUniform;
  float init_scale = 0.05f;
  std::string table;  // the owner's name when the layer looks up another's table, else ""
};

void parse_embedding_bag_spec(const nlohmann::json& object, const LayerInput& input, LayerSpec spec,
                              std::vector<LayerSpec>& layers);
void embedding_bag_parameters(const LayerSpec& spec, std::vector<ParameterSpec>& out);
void make_embedding_bag(const LayerSpec& spec, ParameterBinder& binder, std::size_t max_batch_size,
                        ModelLayer& layer);

class EmbeddingBag {
 public:
  // `bias`: [dim] added to every output row, or null for none.
  EmbeddingBag(std::string name, float* table, std::size_t rows, std::size_t dim, Combiner combiner,
               const float* bias = nullptr);

  std::size_t dim() const { return dim_; }
  // Throws InvalidInput naming the layer when an id is >= rows.
  void forward(const Batch& batch, float* out);
  // Uses the combiner scales of the last forward() of the same batch (throws InvalidInput
  // otherwise). gradient.touched_rows lists each row the batch touched once, in increasing order
  // (BatchRows), so the optimizer walks the table and its state in address order. Each row's
  // gradient accumulates in example order, so results are deterministic. The first call
  // allocates a bit per table row; later calls allocate only when a batch has more ids than every
  // earlier one.
  void backward(const Batch& batch, const float* grad_out, ParameterGradient& gradient);
  // backward fused with an SGD step of `learning_rate` on the table, with no gradient buffer:
  // for each example b in order and each of its ids j in order, with a = w_j · (-learning_rate ·
  // c_b) (skipped when 0), table[id_j] += a · grad_out[b] (scatter_weighted_add's order). Equal
  // to backward() followed by p -= learning_rate · gradient up to float rounding (a row's terms
  // are applied one by one instead of summed first), deterministic, and allocation-free. Same
  // precondition and error as backward().
  void backward_sgd(const Batch& batch, const float* grad_out, float learning_rate);
  // The bias's gradient: bias_gradient[k] += Σ_b grad_out[b, k], examples in order (also those
  // without ids). A layer without a bias has none: a no-op.
  void backward_bias(std::size_t batch_size, const float* grad_out, float* bias_gradient) const;

 private:
  void check_last_forward(const Batch& batch) const;

  std::string name_;
  float* table_;
  std::size_t rows_;
  std::size_t dim_;
  Combiner combiner_;
  const float* bias_;                           // [dim_] or null
  std::vector<float> scales_;                   // c_b of the last forward
  const std::uint32_t* forward_ids_ = nullptr;  // the ids and count of the last forward
  std::uint32_t forward_nnz_ = 0;
  BatchRows batch_rows_;
  std::vector<std::uint32_t> slot_of_;  // nonzero position → index into touched_rows
};

}  // namespace fedleaf::core
