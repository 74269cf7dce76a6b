// The columns of one model input over a set of examples, as data arrives from outside (the
// records featurizer, the wasm binding, a test) before it becomes a Dataset: sparse ids in CSR
// form with optional weights, or dense float rows.
//
//   InputColumns body{"body", InputKind::kSparseIds};
//   body.offsets = {0, 2, 3};  body.ids = {7, 42, 7};          // two examples
//   InputColumns numeric{"numeric", InputKind::kDense};
//   numeric.width = 2;  numeric.dense = {0.5f, 1.0f, 0.0f, 2.0f};
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fedleaf::core {

enum class InputKind { kSparseIds, kDense };

struct InputColumns {
  std::string name;  // the plan input the columns feed
  InputKind kind = InputKind::kSparseIds;
  // Sparse: example i has ids[offsets[i] .. offsets[i+1]) and the same range of weights (empty:
  // every weight is 1); num_features bounds the ids (0: max id + 1).
  std::vector<std::uint32_t> offsets{0};
  std::vector<std::uint32_t> ids;
  std::vector<float> weights;
  std::uint32_t num_features = 0;
  // Dense: [examples, width] row-major.
  std::size_t width = 0;
  std::vector<float> dense;
};

}  // namespace fedleaf::core
