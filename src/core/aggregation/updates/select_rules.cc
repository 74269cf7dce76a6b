#include "core/aggregation/updates/select_rules.h"

#include <algorithm>

#include "core/error.h"
#include "core/text/text_format.h"

namespace fedleaf::core {

void check_select_request(const SelectRequest& request, const SafetensorsIndex& model,
                          const UpdatePlan& plan) {
  for (const auto& [name, ids] : request.rows) {
    const std::string where = "select: tensor " + in_quotes(name);
    const auto array = model.arrays.find(name);
    const bool stored_sparse = model.metadata.count(name + ":encoding") > 0;
    if (array == model.arrays.end() && !stored_sparse) {
      throw InvalidInput(where + ": unknown tensor (the model has no tensor of that name)");
    }
    const TensorUpdatePlan* rule = plan.find(name);
    if (rule == nullptr) {
      throw InvalidInput(where + " is not marked select: the plan's updates do not name it, " +
                         "and only row_sparse update tensors can be selected");
    }
    if (rule->encoding != UpdateEncoding::kRowSparse) {
      throw InvalidInput(where + " is not marked select: its plan encoding is " +
                         in_quotes(update_encoding_name(rule->encoding)) +
                         ", and only row_sparse tensors can be selected");
    }
    if (rule->download != DownloadMode::kSelect) {
      throw InvalidInput(where + " is not marked select: the plan asks for it whole " +
                         "(download 'full')");
    }
    if (stored_sparse) {
      throw InvalidInput(where + ": the model stores it as a sparse tuple, and only dense " +
                         "arrays can be sliced into rows");
    }
    if (array->second.shape.empty()) {
      throw InvalidInput(where + ": the model stores it with rank 0, which has no rows");
    }
    for (const char* component : {":indices", ":values", ":dense_shape"}) {
      if (model.arrays.count(name + component)) {
        throw InvalidInput(where + ": the model also holds an array named " +
                           in_quotes(name + component) + ", which the answer's tuple needs");
      }
    }
    const std::uint64_t max_rows = rule->max_select_rows;
    if (max_rows > 0 && ids.size() > max_rows) {
      throw InvalidInput(where + ": " + std::to_string(ids.size()) +
                         " row ids exceed the plan's max_select_rows of " +
                         std::to_string(max_rows));
    }
    const std::uint64_t rows = array->second.shape[0];
    const auto first_out = std::lower_bound(ids.begin(), ids.end(), rows);
    if (first_out != ids.end()) {
      throw InvalidInput(where + ": row id " + std::to_string(*first_out) +
                         " is out of range: the tensor has " + std::to_string(rows) + " rows");
    }
  }
}

std::set<std::string> f16_download_tensors(const UpdatePlan& plan) {
  std::set<std::string> out;
  for (const TensorUpdatePlan& t : plan.tensors) {
    if (t.download_values == ValuesCompression::kF16) out.insert(t.name);
  }
  return out;
}

}  // namespace fedleaf::core
