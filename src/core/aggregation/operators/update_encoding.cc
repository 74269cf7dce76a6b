#include "core/aggregation/operators/update_encoding.h"

#include "core/error.h"
#include "core/text/text_format.h"

namespace fedleaf::core {

std::string_view update_encoding_name(UpdateEncoding encoding) {
  switch (encoding) {
    case UpdateEncoding::kDense:
      return "dense";
    case UpdateEncoding::kCoo:
      return "coo";
    case UpdateEncoding::kRowSparse:
      return "row_sparse";
  }
  return "dense";
}

UpdateEncoding parse_update_encoding(std::string_view name, const std::string& context) {
  for (const UpdateEncoding encoding : kUpdateEncodings) {
    if (name == update_encoding_name(encoding)) return encoding;
  }
  throw InvalidInput(context + ": unknown encoding " + in_quotes(name) +
                     " (expected 'dense', 'coo' or 'row_sparse')");
}

UpdateEncoding update_encoding_of(const Tensor& tensor) {
  switch (tensor.index()) {
    case 1:
      return UpdateEncoding::kCoo;
    case 2:
      return UpdateEncoding::kRowSparse;
    default:
      return UpdateEncoding::kDense;
  }
}

}  // namespace fedleaf::core
