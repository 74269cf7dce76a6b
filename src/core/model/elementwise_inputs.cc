#include "core/model/elementwise_inputs.h"

#include <string>
#include <utility>

#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"

namespace fedleaf::core {

void parse_elementwise_inputs(const nlohmann::json& l, const LayerInput& input, LayerSpec spec,
                              std::vector<LayerSpec>& layers) {
  check_known_fields(l, spec.path, kElementwiseInputsFields);
  const std::string type = spec.kind->type;
  if (input.sources.size() < 2) {
    plan_json::fail(spec.path + ".inputs", type + " needs \"inputs\": at least two names");
  }
  const LayerSource& first = input.sources.front();
  for (std::size_t k = 0; k < input.sources.size(); ++k) {
    const LayerSource& s = input.sources[k];
    if (s.kind != InputKind::kDense) {
      plan_json::fail(spec.path + ".inputs[" + std::to_string(k) + "]",
                      "'" + s.name + "' is a sparse_ids input: an embedding_bag reads it");
    }
    if (s.width != first.width) {
      plan_json::fail(spec.path, type + " needs equal widths, got " + std::to_string(first.width) +
                                     " ('" + first.name + "') and " + std::to_string(s.width) +
                                     " ('" + s.name + "')");
    }
  }
  spec.input_width = first.width;
  spec.output_width = first.width;
  layers.push_back(std::move(spec));
}

}  // namespace fedleaf::core
