#include "core/model/model_parameters.h"

#include "core/error.h"

namespace fedleaf::core {

Parameters declared_parameters(const ModelSpec& spec, NamedTensors decoded) {
  Parameters params;
  for (const ParameterSpec& p : parameter_specs(spec)) {
    const auto it = decoded.find(p.name);
    if (it == decoded.end()) {
      throw InvalidInput("model: missing tensor '" + p.name + "' declared by " + p.declared_by);
    }
    DenseTensor* dense = std::get_if<DenseTensor>(&it->second);
    if (dense == nullptr) {
      throw InvalidInput("model tensor '" + p.name + "': expected a dense tensor, got " +
                         std::string(encoding_name(it->second)));
    }
    if (dense->shape() != p.shape) {
      throw InvalidInput("model tensor '" + p.name + "': shape " + shape_to_string(dense->shape()) +
                         " differs from " + shape_to_string(p.shape) + " declared by " +
                         p.declared_by);
    }
    params.emplace(p.name, std::move(*dense));
  }
  return params;
}

}  // namespace fedleaf::core
