#include "core/model/add_layer.h"

#include <algorithm>

#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"

namespace fedleaf::core {

void parse_add_spec(const nlohmann::json& l, const LayerInput& input, LayerSpec spec,
                    std::vector<LayerSpec>& layers) {
  check_known_fields(l, spec.path, kAddFields);
  if (input.sources.size() < 2) {
    plan_json::fail(spec.path + ".inputs", "add needs \"inputs\": at least two names");
  }
  const LayerSource& first = input.sources.front();
  for (std::size_t k = 0; k < input.sources.size(); ++k) {
    const LayerSource& s = input.sources[k];
    if (s.kind != InputKind::kDense) {
      plan_json::fail(spec.path + ".inputs[" + std::to_string(k) + "]",
                      "'" + s.name + "' is a sparse_ids input: an embedding_bag reads it");
    }
    if (s.width != first.width) {
      plan_json::fail(spec.path, "add needs equal widths, got " + std::to_string(first.width) +
                                     " ('" + first.name + "') and " + std::to_string(s.width) +
                                     " ('" + s.name + "')");
    }
  }
  spec.input_width = first.width;
  spec.output_width = first.width;
  layers.push_back(std::move(spec));
}

void add_forward(const std::vector<const float*>& xs, std::size_t n, float* out) {
  std::copy(xs[0], xs[0] + n, out);
  for (std::size_t k = 1; k < xs.size(); ++k) {
    const float* x = xs[k];
    for (std::size_t i = 0; i < n; ++i) out[i] += x[i];
  }
}

}  // namespace fedleaf::core
