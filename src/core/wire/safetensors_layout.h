// The canonical layout of a safetensors file: header text and where each array's bytes go.
// write_safetensors() and the model:select answer both write through it, so equal contents give
// identical bytes whichever wrote them.
//
//   std::vector<SafetensorsArraySpec> arrays = {{"w", DType::F32, {2, 3}}};
//   SafetensorsLayout layout = layout_safetensors(arrays, {{"round", "3"}});
//   std::vector<std::uint8_t> out(layout.file_size);
//   std::memcpy(out.data(), layout.header.data(), layout.header.size());
//   std::memcpy(out.data() + layout.offsets[0], w_bytes, 24);
//
// Layout: 8-byte little-endian header length N, N bytes of JSON header padded with spaces to a
// multiple of 8, then the data packed with no gaps, arrays ordered by element size (largest
// first) and then by name, so every array is aligned to its element size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor/dense_tensor.h"
#include "core/tensor/tensor.h"

namespace fedleaf::core {

struct SafetensorsArraySpec {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
};

struct SafetensorsLayout {
  std::string header;                  // the length prefix and the padded JSON header
  std::vector<std::uint64_t> offsets;  // per input array (same order), from the file start
  std::uint64_t file_size = 0;
};

// `metadata` is written as __metadata__ (omitted when empty). Throws InvalidInput when a name
// is empty, "__metadata__" or used twice, or a name or metadata text is not valid UTF-8.
SafetensorsLayout layout_safetensors(const std::vector<SafetensorsArraySpec>& arrays,
                                     const Metadata& metadata);

}  // namespace fedleaf::core
