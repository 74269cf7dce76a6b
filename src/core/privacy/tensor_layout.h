// The full shape and dtype of every tensor a private sum releases, and how it is cut into rows.
//
//   TensorLayouts layouts{{"emb/weight", {DType::F32, {262144, 16}}}, {"out/bias", {DType::F32,
//   {2}}}}; RowSplit split = row_split(layouts.at("emb/weight"));   // 262144 rows of 16
//
// A row is a slice along the first dimension (what a row-sparse update carries); a scalar is
// one row of one element. The noise of a row is keyed by the tensor's ordinal, its position in
// name order (tree_noise.h): a population's layouts must never change while its tree runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "core/tensor/dense_tensor.h"

namespace fedleaf::core {

struct TensorLayout {
  DType dtype;  // F32 or F64: the dtype of the released tensor
  Shape shape;
};
using TensorLayouts = std::map<std::string, TensorLayout>;

struct RowSplit {
  std::uint64_t rows;
  std::size_t row_size;
};

// InvalidInput naming "layouts['<name>']" unless dtype is F32 or F64 and the element count fits.
RowSplit row_split(const std::string& name, const TensorLayout& layout);

}  // namespace fedleaf::core
