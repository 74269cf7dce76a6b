#include "core/privacy/tensor_layout.h"

#include <string>

namespace fedleaf::core {

RowSplit row_split(const std::string& name, const TensorLayout& layout) {
  const std::string context = "layouts['" + name + "']";
  if (layout.dtype != DType::F32 && layout.dtype != DType::F64) {
    throw InvalidInput(context + ": dtype must be F32 or F64, got " +
                       std::string(dtype_name(layout.dtype)));
  }
  shape_element_count(layout.shape, context);
  if (layout.shape.empty()) return {1, 1};
  const Shape inner(layout.shape.begin() + 1, layout.shape.end());
  return {layout.shape[0], shape_element_count(inner, context)};
}

}  // namespace fedleaf::core
