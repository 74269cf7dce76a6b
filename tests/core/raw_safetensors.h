// Safetensors bytes with arrays given as raw bytes of any dtype: how the tests build files that
// write_safetensors cannot write (F16 and BF16 arrays, which no tensor holds).
//
//   std::vector<std::uint8_t> file = raw_safetensors({{"w", DType::F16, {2}, f16_bytes({0x3c00,
//   0x4000})}});
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/wire/safetensors_layout.h"

namespace fedleaf::test {

struct RawArray {
  std::string name;
  core::DType dtype;
  core::Shape shape;
  std::vector<std::uint8_t> bytes;
};

inline std::vector<std::uint8_t> raw_safetensors(const std::vector<RawArray>& arrays,
                                                 const core::Metadata& metadata = {}) {
  std::vector<core::SafetensorsArraySpec> specs;
  for (const RawArray& a : arrays) specs.push_back({a.name, a.dtype, a.shape});
  const core::SafetensorsLayout layout = core::layout_safetensors(specs, metadata);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(layout.file_size));
  std::memcpy(out.data(), layout.header.data(), layout.header.size());
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    if (!arrays[i].bytes.empty()) {
      std::memcpy(out.data() + layout.offsets[i], arrays[i].bytes.data(), arrays[i].bytes.size());
    }
  }
  return out;
}

// 16-bit values as little-endian bytes.
inline std::vector<std::uint8_t> half_bytes(const std::vector<std::uint16_t>& values) {
  std::vector<std::uint8_t> out;
  for (std::uint16_t v : values) {
    out.push_back(static_cast<std::uint8_t>(v & 0xff));
    out.push_back(static_cast<std::uint8_t>(v >> 8));
  }
  return out;
}

}  // namespace fedleaf::test
