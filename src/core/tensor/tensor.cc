#include "core/tensor/tensor.h"

namespace fedleaf::core {

std::string_view encoding_name(const Tensor& tensor) {
  switch (tensor.index()) {
    case 0:
      return "dense";
    case 1:
      return "coo";
    default:
      return "row_sparse";
  }
}

}  // namespace fedleaf::core
