#include "core/data/batch.h"

#include <algorithm>

#include "core/kernels/prefetch.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif

namespace fedleaf::core {
namespace {

// Ids per example whose cache lines (16 ids each) a gather requests ahead of the copy.
constexpr std::uint32_t kPrefetchIds = 64;

// to[0..n) = from[0..n). Under wasm, std::copy is a call to a memcpy that runs as a wasm loop
// (without bulk memory, which Emscripten 3.1.6 cannot link here): a third of a sparse step of
// short examples went there. The SIMD build copies four ids per load and store instead.
void copy_ids(const std::uint32_t* from, std::size_t n, std::uint32_t* to) {
#if defined(__wasm_simd128__)
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) wasm_v128_store(to + i, wasm_v128_load(from + i));
  switch (n - i) {  // not a loop, which the compiler would turn back into a memcpy call
    case 3:
      to[i + 2] = from[i + 2];
      [[fallthrough]];
    case 2:
      to[i + 1] = from[i + 1];
      [[fallthrough]];
    case 1:
      to[i] = from[i];
      break;
    default:
      break;
  }
#else
  std::copy(from, from + n, to);
#endif
}

}  // namespace

BatchGatherer::BatchGatherer(const Dataset& dataset, BatchIds ids) : dataset_(dataset) {
  FeedSource source;
  if (ids == BatchIds::kGlobal) {
    global_ = dataset_.distinct_ids().rows();
    source.map = &global_;
  } else {
    source.ids_below = static_cast<std::uint32_t>(dataset_.distinct_ids().size());
  }
  sources_.push_back(source);
  buffers_.resize(1);
}

BatchGatherer::BatchGatherer(const Dataset& dataset, std::vector<FeedSource> feeds)
    : dataset_(dataset), single_(false), sources_(std::move(feeds)) {
  buffers_.resize(sources_.size());
  feeds_.resize(sources_.size());
}

Batch BatchGatherer::gather(const std::uint32_t* examples, std::size_t count) {
  Batch batch;
  batch.size = count;
  const std::vector<std::int32_t>& labels = dataset_.labels();
  if (!labels.empty()) {
    labels_.resize(count);
    for (std::size_t b = 0; b < count; ++b) labels_[b] = labels[examples[b]];
    batch.labels = labels_.data();
  }
  if (dataset_.has_targets()) {
    const std::size_t width = dataset_.target_width();
    const float* targets = dataset_.targets().data();
    targets_.resize(count * width);
    for (std::size_t b = 0; b < count; ++b) {
      const float* row = targets + static_cast<std::size_t>(examples[b]) * width;
      std::copy(row, row + width, targets_.data() + b * width);
    }
    batch.targets = targets_.data();
  }
  if (single_) {
    fill(sources_[0], buffers_[0], examples, count, batch);
    return batch;
  }
  for (std::size_t f = 0; f < sources_.size(); ++f) {
    feeds_[f] = Batch{};
    feeds_[f].size = count;
    feeds_[f].labels = batch.labels;
    feeds_[f].targets = batch.targets;
    fill(sources_[f], buffers_[f], examples, count, feeds_[f]);
  }
  batch.feeds = feeds_.data();
  batch.num_feeds = feeds_.size();
  return batch;
}

void BatchGatherer::fill(const FeedSource& source, Buffers& buffers, const std::uint32_t* examples,
                         std::size_t count, Batch& batch) {
  const std::size_t input = source.input;
  if (!dataset_.is_sparse(input)) {
    const std::size_t width = dataset_.num_features(input);
    buffers.dense.resize(count * width);
    const float* values = dataset_.dense_values(input).data();
    for (std::size_t b = 0; b < count; ++b) {
      const float* row = values + static_cast<std::size_t>(examples[b]) * width;
      std::copy(row, row + width, buffers.dense.data() + b * width);
    }
    batch.dense = buffers.dense.data();
    batch.dense_width = width;
    return;
  }
  const std::vector<std::uint32_t>& offsets = dataset_.offsets(input);
  const std::vector<float>& weights = dataset_.weights(input);
  const std::uint32_t* ids = dataset_.compact_ids(input).data();
  std::vector<std::uint32_t>& offsets_ = buffers.offsets;
  offsets_.resize(count + 1);
  offsets_[0] = 0;
  std::size_t nnz = 0;
  for (std::size_t b = 0; b < count; ++b) {
    const std::uint32_t begin = offsets[examples[b]];
    const std::uint32_t end = offsets[examples[b] + 1];
    // The examples' ids are at random places in the dataset: the first cache lines of each are
    // requested here, all at once, instead of one example's misses at a time by the copy below
    // (the hardware prefetcher follows a long example's later lines): ~10% of a step on workload
    // (a), native and wasm.
    const std::uint32_t ahead = std::min(end, begin + kPrefetchIds);
    for (std::uint32_t j = begin; j < ahead; j += 16) prefetch_line_or_load(ids + j);
    nnz += end - begin;
    offsets_[b + 1] = static_cast<std::uint32_t>(nnz);
  }
  buffers.ids.resize(nnz);
  buffers.weights.resize(weights.empty() ? 0 : nnz);
  const std::uint32_t* map = source.map != nullptr ? source.map->data() : nullptr;
  for (std::size_t b = 0; b < count; ++b) {
    const std::uint32_t begin = offsets[examples[b]];
    const std::uint32_t end = offsets[examples[b] + 1];
    std::uint32_t* to = buffers.ids.data() + offsets_[b];
    if (map == nullptr) {
      copy_ids(ids + begin, end - begin, to);
    } else {
      for (std::uint32_t j = begin; j < end; ++j) *to++ = map[ids[j]];
    }
    if (!weights.empty()) {
      std::copy(weights.data() + begin, weights.data() + end, buffers.weights.data() + offsets_[b]);
    }
  }
  batch.ids_below = source.ids_below;
  batch.offsets = offsets_.data();
  batch.ids = buffers.ids.data();
  batch.weights = weights.empty() ? nullptr : buffers.weights.data();
}

}  // namespace fedleaf::core
