// BatchGatherer's copy of a sparse batch, for every example length the SIMD build's id copy
// distinguishes (whole groups of four ids and each remainder) and lengths around the ids a gather
// requests ahead per example (64: shorter, equal, longer, several cache lines more). Built into
// train_tests and, under Emscripten, also against the SIMD core (train_kernels_simd_tests).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/data/batch.h"
#include "core/data/dataset.h"

using namespace fedleaf::core;

TEST_CASE("batch_gatherer_copies_examples_of_every_length_whole_as_global_and_compact_ids",
          "[dataset]") {
  const std::vector<std::uint32_t> lengths{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 63, 64, 65, 130};
  // Example e has lengths[e] ids, id k of example e is 3 e + 5 k (distinct, unsorted overall).
  const auto id = [](std::uint32_t e, std::uint32_t k) { return 3 * e + 5 * k; };
  std::vector<std::uint32_t> offsets{0};
  std::vector<std::uint32_t> ids;
  std::vector<std::int32_t> labels;
  for (std::uint32_t e = 0; e < lengths.size(); ++e) {
    for (std::uint32_t k = 0; k < lengths[e]; ++k) ids.push_back(id(e, k));
    offsets.push_back(static_cast<std::uint32_t>(ids.size()));
    labels.push_back(static_cast<std::int32_t>(e % 2));
  }
  const Dataset d = Dataset::from_csr(offsets, ids, {}, labels, 1024);
  const std::vector<std::uint32_t> distinct = d.distinct_ids().rows();
  const std::vector<std::uint32_t> order{9, 0, 12, 7, 1, 6, 13, 2, 5, 10, 3, 8, 4, 11};
  std::vector<std::uint32_t> expected;
  for (std::uint32_t e : order) {
    for (std::uint32_t k = 0; k < lengths[e]; ++k) expected.push_back(id(e, k));
  }
  std::vector<std::uint32_t> expected_compact;
  for (std::uint32_t global : expected) {
    expected_compact.push_back(static_cast<std::uint32_t>(
        std::lower_bound(distinct.begin(), distinct.end(), global) - distinct.begin()));
  }

  BatchGatherer gather(d, BatchIds::kGlobal);
  BatchGatherer gather_compact(d, BatchIds::kCompact);
  const Batch b = gather.gather(order.data(), order.size());
  const Batch c = gather_compact.gather(order.data(), order.size());

  CHECK(b.offsets[order.size()] == expected.size());
  CHECK(std::vector<std::uint32_t>(b.ids, b.ids + expected.size()) == expected);
  CHECK(std::vector<std::uint32_t>(c.offsets, c.offsets + order.size() + 1) ==
        std::vector<std::uint32_t>(b.offsets, b.offsets + order.size() + 1));
  CHECK(std::vector<std::uint32_t>(c.ids, c.ids + expected.size()) == expected_compact);
  CHECK(c.ids_below == distinct.size());
}
