#include "core/tensor/linear_index.h"

#include <limits>

namespace fedleaf::core {

std::optional<std::vector<std::uint64_t>> row_major_strides(const DenseShape& dense_shape) {
  std::vector<std::uint64_t> strides(dense_shape.size());
  std::uint64_t stride = 1;
  for (std::size_t d = dense_shape.size(); d-- > 0;) {
    strides[d] = stride;
    const auto dim = static_cast<std::uint64_t>(dense_shape[d]);
    if (dim != 0 && stride > std::numeric_limits<std::uint64_t>::max() / dim) return std::nullopt;
    stride *= dim;
  }
  return strides;
}

}  // namespace fedleaf::core
