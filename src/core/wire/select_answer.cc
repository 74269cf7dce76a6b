#include "core/wire/select_answer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/tensor/half_float.h"
#include "core/text/text_format.h"
#include "core/wire/safetensors_layout.h"
#include "core/wire/update_compression.h"

namespace fedleaf::core {
namespace {

// Where one array of the answer takes its bytes from.
struct Source {
  enum class Kind { kModelRange, kRows, kInt64s, kInt32Ids } kind;
  bool to_f16 = false;  // kModelRange, kRows: F32 bytes written as F16 (half the length)
  // Offsets and lengths inside the model: they fit a size_t, since the index describes exactly
  // the model's size_t bytes (the first check of write_select_answer).
  std::size_t begin = 0;                            // kModelRange, kRows: model offset
  std::size_t length = 0;                           // kModelRange: bytes; kRows: bytes per row
  const std::vector<std::uint32_t>* ids = nullptr;  // kRows, kInt32Ids, kInt64s (as I64)
  std::vector<std::int64_t> values;                 // kInt64s when ids is null
};

// `n` F32 values at `src` as F16 at `dst`; beyond F16's range a value saturates to ±65504, so
// the answer stays finite.
void put_f16(const std::uint8_t* src, std::size_t n, std::uint8_t* dst) {
  constexpr float kMaxF16 = 65504.0f;
  for (std::size_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, src + 4 * i, 4);
    const std::uint16_t h = f32_to_f16(std::isnan(v) ? v : std::clamp(v, -kMaxF16, kMaxF16));
    dst[2 * i] = static_cast<std::uint8_t>(h);
    dst[2 * i + 1] = static_cast<std::uint8_t>(h >> 8);
  }
}

void put_le_i32(std::uint8_t* out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

void put_le_i64(std::uint8_t* out, std::int64_t value) {
  const auto v = static_cast<std::uint64_t>(value);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

std::vector<std::uint8_t> write_select_answer(const std::uint8_t* model, std::size_t size,
                                              const SafetensorsIndex& index,
                                              const SelectRequest& request,
                                              const Metadata& extra_metadata,
                                              const std::set<std::string>& f16_values) {
  if (size != index.file_size) {
    throw Error("select: the index describes " + std::to_string(index.file_size) +
                " bytes but the model has " + std::to_string(size));
  }
  std::vector<SafetensorsArraySpec> specs;
  std::vector<Source> sources;
  Metadata metadata = index.metadata;
  const auto as_f16 = [&](const std::string& name, const SafetensorsArray& array) {
    if (!f16_values.count(name) || array.dtype != DType::F32) return false;
    metadata[values_compression_key(name)] = "f16";
    return true;
  };
  for (const auto& [name, array] : index.arrays) {
    if (request.rows.count(name)) continue;
    const bool f16 = as_f16(name, array);
    specs.push_back({name, f16 ? DType::F16 : array.dtype, array.shape});
    sources.push_back({Source::Kind::kModelRange,
                       f16,
                       static_cast<std::size_t>(array.begin),
                       static_cast<std::size_t>(array.end - array.begin),
                       nullptr,
                       {}});
  }
  for (const auto& [name, ids] : request.rows) {
    const std::string where = "select: tensor " + in_quotes(name);
    const auto it = index.arrays.find(name);
    if (it == index.arrays.end() || it->second.shape.empty()) {
      throw InvalidInput(where + " is not a dense array of rank >= 1 in the model");
    }
    const SafetensorsArray& array = it->second;
    if (!ids.empty() && ids.back() >= array.shape[0]) {
      throw InvalidInput(where + ": row id " + std::to_string(ids.back()) +
                         " is out of range: the tensor has " + std::to_string(array.shape[0]) +
                         " rows");
    }
    Shape values_shape = array.shape;
    values_shape[0] = ids.size();
    const bool f16 = as_f16(name, array);
    // Beside F16 values the row ids are I32 when every row id of the tensor fits (8 bytes an id
    // would be a fifth of a dim-16 answer); every reader of a tuple's ids takes I32 and I64.
    const bool i32_ids = f16 && array.shape[0] <= std::uint64_t{1} << 31;
    specs.push_back({name + ":indices", i32_ids ? DType::I32 : DType::I64, {ids.size()}});
    sources.push_back(
        {i32_ids ? Source::Kind::kInt32Ids : Source::Kind::kInt64s, false, 0, 0, &ids, {}});
    specs.push_back({name + ":values", f16 ? DType::F16 : array.dtype, values_shape});
    sources.push_back({Source::Kind::kRows,
                       f16,
                       static_cast<std::size_t>(array.begin),
                       static_cast<std::size_t>(row_bytes(array)),
                       &ids,
                       {}});
    specs.push_back({name + ":dense_shape", DType::I64, {array.shape.size()}});
    sources.push_back({Source::Kind::kInt64s, false, 0, 0, nullptr,
                       std::vector<std::int64_t>(array.shape.begin(), array.shape.end())});
    metadata[name + ":encoding"] = "row_sparse";
  }
  for (const auto& [key, value] : extra_metadata) metadata[key] = value;

  const SafetensorsLayout layout = layout_safetensors(specs, metadata);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(layout.file_size));
  std::memcpy(out.data(), layout.header.data(), layout.header.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::uint8_t* dst = out.data() + layout.offsets[i];
    const Source& s = sources[i];
    switch (s.kind) {
      case Source::Kind::kModelRange:
        if (s.to_f16) {
          put_f16(model + s.begin, s.length / 4, dst);
        } else if (s.length) {
          std::memcpy(dst, model + s.begin, s.length);
        }
        break;
      case Source::Kind::kRows:
        for (const std::uint32_t id : *s.ids) {
          if (s.to_f16) {
            put_f16(model + s.begin + id * s.length, s.length / 4, dst);
            dst += s.length / 2;
          } else {
            std::memcpy(dst, model + s.begin + id * s.length, s.length);
            dst += s.length;
          }
        }
        break;
      case Source::Kind::kInt32Ids:
        for (const std::uint32_t id : *s.ids) {
          put_le_i32(dst, id);
          dst += 4;
        }
        break;
      case Source::Kind::kInt64s:
        if (s.ids) {
          for (const std::uint32_t id : *s.ids) {
            put_le_i64(dst, id);
            dst += 8;
          }
        } else {
          for (const std::int64_t v : s.values) {
            put_le_i64(dst, v);
            dst += 8;
          }
        }
        break;
    }
  }
  return out;
}

}  // namespace fedleaf::core
