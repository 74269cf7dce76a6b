// One mini-batch as the model reads it: contiguous views, gathered from a Dataset by example
// index so that shuffled batches still stream through memory in order.
//
//   BatchGatherer gather(dataset, BatchIds::kCompact);
//   Batch b = gather.gather(order.data() + start, count);   // views valid until the next gather
//   model.forward_backward(b);
//
// The gatherer reuses its buffers: after the largest batch has been seen once, gathering
// allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/train/dataset.h"

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
};

// Which ids a gatherer's batches hold: the dataset's compact ids (rows of a compact table of the
// dataset's distinct ids, what a session trains: a plain copy) or the global ids (rows of the
// whole table, for inference over a full model: each compact id is looked up in a list of the
// distinct ids, 4 bytes per distinct id, held by the gatherer).
enum class BatchIds { kCompact, kGlobal };

class BatchGatherer {
 public:
  // `dataset` must outlive the gatherer.
  BatchGatherer(const Dataset& dataset, BatchIds ids);

  // Copies examples[0..count) into the gatherer's buffers; indices must be < dataset.size().
  Batch gather(const std::uint32_t* examples, std::size_t count);

 private:
  const Dataset& dataset_;
  BatchIds ids_;
  std::vector<std::uint32_t> global_;  // kGlobal: the distinct ids, increasing
  std::vector<std::uint32_t> offsets_;
  std::vector<std::uint32_t> batch_ids_;
  std::vector<float> weights_;
  std::vector<float> dense_;
  std::vector<std::int32_t> labels_;
};

}  // namespace fedleaf::core
