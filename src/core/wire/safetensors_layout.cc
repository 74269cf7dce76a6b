#include "core/wire/safetensors_layout.h"

#include <algorithm>
#include <numeric>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text/text_format.h"

namespace fedleaf::core {

using nlohmann::json;

SafetensorsLayout layout_safetensors(const std::vector<SafetensorsArraySpec>& arrays,
                                     const Metadata& metadata) {
  std::vector<std::size_t> order(arrays.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const std::size_t sa = dtype_size(arrays[a].dtype), sb = dtype_size(arrays[b].dtype);
    return sa != sb ? sa > sb : arrays[a].name < arrays[b].name;
  });
  SafetensorsLayout layout;
  layout.offsets.resize(arrays.size());
  json header = json::object();
  std::uint64_t offset = 0;
  for (const std::size_t i : order) {
    const SafetensorsArraySpec& a = arrays[i];
    if (a.name.empty() || a.name == "__metadata__") {
      throw InvalidInput("safetensors: invalid tensor name " + in_quotes(a.name));
    }
    if (header.contains(a.name)) {
      throw InvalidInput("safetensors: tensor name " + in_quotes(a.name) +
                         " is used twice (a dense tensor collides with a sparse component)");
    }
    const std::uint64_t nbytes =
        shape_element_count(a.shape, "safetensors: tensor " + in_quotes(a.name)) *
        dtype_size(a.dtype);
    header[a.name] = {{"dtype", dtype_name(a.dtype)},
                      {"shape", a.shape},
                      {"data_offsets", {offset, offset + nbytes}}};
    layout.offsets[i] = offset;
    offset += nbytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text;
  try {
    text = header.dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const json::exception&) {
    throw InvalidInput("safetensors: tensor names and metadata must be valid UTF-8");
  }
  text.resize((text.size() + 7) / 8 * 8, ' ');
  const std::uint64_t n = text.size();
  layout.header.resize(8);
  for (int i = 0; i < 8; ++i) layout.header[i] = static_cast<char>(n >> (8 * i));
  layout.header += text;
  for (std::uint64_t& o : layout.offsets) o += layout.header.size();
  layout.file_size = layout.header.size() + offset;
  return layout;
}

}  // namespace fedleaf::core
