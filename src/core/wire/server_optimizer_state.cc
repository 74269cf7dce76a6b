#include "core/wire/server_optimizer_state.h"

#include <string>

#include "core/error.h"
#include "core/text/text_format.h"
#include "core/wire/safetensors.h"

namespace fedleaf::core {

std::vector<std::uint8_t> write_server_optimizer_state(std::string_view type,
                                                       const NamedTensors& arrays) {
  return write_safetensors(arrays,
                           {{"format", kServerOptimizerStateFormat}, {"type", std::string(type)}});
}

NamedTensors read_server_optimizer_state(const std::uint8_t* data, std::size_t size,
                                         std::string_view type) {
  const std::string where = "server optimizer state";
  SafetensorsReadOptions options;
  options.require_finite = true;
  SafetensorsFile file;
  try {
    file = read_safetensors(data, size, options);
  } catch (const InvalidInput& e) {
    throw InvalidInput(where + ": " + e.what());
  }
  const auto format = file.metadata.find("format");
  if (format == file.metadata.end() || format->second != kServerOptimizerStateFormat) {
    throw InvalidInput(where + ": metadata \"format\" must be " +
                       in_quotes(kServerOptimizerStateFormat));
  }
  const auto stored = file.metadata.find("type");
  if (stored == file.metadata.end() || stored->second != type) {
    throw InvalidInput(where + ": metadata \"type\" must be " + in_quotes(type) +
                       ", the population's optimizer");
  }
  return std::move(file.tensors);
}

}  // namespace fedleaf::core
