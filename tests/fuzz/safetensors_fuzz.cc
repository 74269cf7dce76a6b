// Any byte string either decodes or raises fedleaf::InvalidInput; what decodes re-encodes and
// decodes to the same tensors. Sanitizers catch out-of-bounds reads.
#include <cstdint>
#include <cstdlib>

#include "core/wire/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fedleaf::core;
  SafetensorsFile file;
  try {
    SafetensorsReadOptions options;
    options.require_canonical = (size % 2) == 0;
    file = read_safetensors(data, size, options);
  } catch (const fedleaf::InvalidInput&) {
    return 0;
  }
  std::vector<std::uint8_t> again;
  try {
    again = write_safetensors(file.tensors, file.metadata);
  } catch (const fedleaf::InvalidInput&) {
    // Decodable but not re-encodable only for I32-declared indices, which cannot exceed I32.
    std::abort();
  }
  SafetensorsFile second = read_safetensors(again);
  if (second.metadata != file.metadata || second.tensors.size() != file.tensors.size())
    std::abort();
  return 0;
}
