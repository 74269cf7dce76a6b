// One mini-batch as the model reads it: contiguous views, gathered from a Dataset by example
// index so that shuffled batches still stream through memory in order.
//
//   BatchGatherer gather(dataset, BatchIds::kCompact);
//   Batch b = gather.gather(order.data() + start, count);   // views valid until the next gather
//   model.forward_backward(b);
//
//   BatchGatherer graph(dataset, {{0, &renumber}, {1}});    // a graph model's feeds
//   model.forward_backward(graph.gather(order.data() + start, count));   // b.feeds[0], [1]
//
// The gatherer reuses its buffers: after the largest batch has been seen once, gathering
// allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/data/dataset.h"

namespace fedleaf::core {

struct Batch {
  std::size_t size = 0;
  // Sparse input: example b has ids[offsets[b] .. offsets[b+1]); weights is null when all are 1.
  const std::uint32_t* offsets = nullptr;
  const std::uint32_t* ids = nullptr;
  const float* weights = nullptr;
  // Nonzero: every id is below it (set by a gatherer of compact ids, which are below the number
  // of distinct ids by construction), so a layer with at least that many rows need not scan the
  // ids again. 0: unknown.
  std::uint32_t ids_below = 0;
  // Dense input: [size, dense_width] row-major.
  const float* dense = nullptr;
  std::size_t dense_width = 0;
  const std::int32_t* labels = nullptr;
  // Mean squared error: [size, target width] float targets instead of labels.
  const float* targets = nullptr;
  // A model with several feeds (ModelSpec::feeds: inputs, or a sparse input per table it feeds)
  // reads feed f from feeds[f] (its ids / dense rows; size, labels and targets are this batch's).
  // num_feeds 0: this batch itself is the only feed (a one-input model).
  const Batch* feeds = nullptr;
  std::size_t num_feeds = 0;
};

// Which ids a gatherer's batches hold: the dataset's compact ids (rows of a compact table of the
// dataset's distinct ids, what a session trains: a plain copy) or the global ids (rows of the
// whole table, for inference over a full model: each compact id is looked up in a list of the
// distinct ids, 4 bytes per distinct id, held by the gatherer).
enum class BatchIds { kCompact, kGlobal };

// One feed of a graph model's batches (ModelSpec::feeds): dataset input `input`; for sparse ids,
// each compact id c becomes (*map)[c] when map is not null (a table's numbering over several
// inputs, or global ids), else stays as is, and ids_below (0: unknown) vouches that every id the
// feed holds is below it.
struct FeedSource {
  std::size_t input = 0;
  const std::vector<std::uint32_t>* map = nullptr;
  std::uint32_t ids_below = 0;
};

class BatchGatherer {
 public:
  // One feed, the batch itself (num_feeds 0): input 0 of `dataset`, which must outlive the
  // gatherer.
  BatchGatherer(const Dataset& dataset, BatchIds ids);
  // A batch with feeds[f] as its feed f; the maps must outlive the gatherer too.
  BatchGatherer(const Dataset& dataset, std::vector<FeedSource> feeds);

  // Copies examples[0..count) into the gatherer's buffers; indices must be < dataset.size().
  Batch gather(const std::uint32_t* examples, std::size_t count);

 private:
  struct Buffers {
    std::vector<std::uint32_t> offsets;
    std::vector<std::uint32_t> ids;
    std::vector<float> weights;
    std::vector<float> dense;
  };
  void fill(const FeedSource& source, Buffers& buffers, const std::uint32_t* examples,
            std::size_t count, Batch& out);

  const Dataset& dataset_;
  bool single_ = true;                 // the legacy one-feed batch
  std::vector<std::uint32_t> global_;  // kGlobal: the distinct ids, increasing
  std::vector<FeedSource> sources_;
  std::vector<Buffers> buffers_;
  std::vector<Batch> feeds_;
  std::vector<std::int32_t> labels_;
  std::vector<float> targets_;
};

}  // namespace fedleaf::core
