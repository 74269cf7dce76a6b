#include "core/wire/update_compression.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/tensor/half_float.h"
#include "core/text/text_format.h"

namespace fedleaf::core {
namespace {

constexpr std::string_view kEncodingSuffix = ":encoding";
constexpr std::string_view kValuesCompressionSuffix = ":values_compression";
constexpr std::string_view kIdsCompressionSuffix = ":ids_compression";

// The largest scale whose ±127 × scale stays finite in F32.
constexpr float kMaxInt8Scale = std::numeric_limits<float>::max() / 127.0f;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string tensor_label(const std::string& tensor) { return "tensor " + in_quotes(tensor); }

std::size_t element_count(const Shape& shape) {
  std::size_t n = 1;
  for (const std::size_t d : shape) n *= d;
  return n;
}

const SafetensorsArray& stored_array(const SafetensorsIndex& index, const std::string& tensor,
                                     const std::string& name, const char* what) {
  const auto it = index.arrays.find(name);
  if (it == index.arrays.end()) {
    throw InvalidInput("safetensors: " + tensor_label(tensor) + ": " + what + " array " +
                       in_quotes(name) + " is missing");
  }
  return it->second;
}

// What a compressed tensor's metadata says about it.
struct CompressedTensor {
  std::string name;
  std::optional<std::string> encoding;  // the sparse tuple's, absent for a dense tensor
  TensorCompression compression;
};

std::map<std::string, CompressedTensor> compressed_tensors(Metadata& metadata) {
  std::map<std::string, CompressedTensor> out;
  for (auto it = metadata.begin(); it != metadata.end();) {
    const std::string& key = it->first;
    const bool values = ends_with(key, kValuesCompressionSuffix);
    const bool ids = ends_with(key, kIdsCompressionSuffix);
    if (!values && !ids) {
      ++it;
      continue;
    }
    const std::size_t suffix = (values ? kValuesCompressionSuffix : kIdsCompressionSuffix).size();
    const std::string tensor = key.substr(0, key.size() - suffix);
    CompressedTensor& t = out[tensor];
    t.name = tensor;
    const std::string where = "safetensors: metadata " + in_quotes(key);
    if (values) {
      const auto v = parse_values_compression(it->second);
      if (!v || *v == ValuesCompression::kF32) {
        throw InvalidInput(where + ": " + in_quotes(it->second) +
                           " is not a values compression (expected 'f16' or 'int8')");
      }
      t.compression.values = *v;
    } else {
      const auto v = parse_ids_compression(it->second);
      if (!v || *v != IdsCompression::kDeltaVarint) {
        throw InvalidInput(where + ": " + in_quotes(it->second) +
                           " is not an ids compression (expected 'delta_varint')");
      }
      t.compression.ids = *v;
    }
    it = metadata.erase(it);
  }
  for (auto& [tensor, t] : out) {
    const auto encoding = metadata.find(tensor + std::string(kEncodingSuffix));
    if (encoding != metadata.end()) t.encoding = encoding->second;
  }
  return out;
}

DenseTensor decode_int8(const CompressedTensor& t, const SafetensorsIndex& index,
                        const std::uint8_t* data, const SafetensorsArray& values,
                        std::set<std::string>& consumed) {
  const std::string where = "safetensors: " + tensor_label(t.name);
  const bool rows = t.encoding == std::string("row_sparse") && values.shape.size() >= 2;
  const std::size_t count = element_count(values.shape);
  const std::size_t row_size = rows ? count / std::max<std::size_t>(1, values.shape[0]) : 0;
  const std::size_t group = int8_group_values(rows, row_size);
  const std::size_t expected = rows ? values.shape[0] : int8_scale_count(count, group);
  const std::string scales_name = scales_array_name(t.name);
  const SafetensorsArray& scales = stored_array(index, t.name, scales_name, "int8 scales");
  consumed.insert(scales_name);
  if (scales.dtype != DType::F32 || scales.shape.size() != 1) {
    throw InvalidInput(where + ": int8 scales " + in_quotes(scales_name) +
                       " must be a rank-1 F32 array, got " + std::string(dtype_name(scales.dtype)) +
                       " " + shape_to_string(scales.shape));
  }
  if (scales.shape[0] != expected) {
    throw InvalidInput(
        where + ": " + std::to_string(scales.shape[0]) + " int8 scales for " +
        std::to_string(expected) +
        (rows ? " rows (one scale per row)"
              : " blocks (one scale per " + std::to_string(kInt8BlockValues) + " values)"));
  }
  DenseTensor out = DenseTensor::zeros(DType::F32, values.shape);
  float* dst = out.data<float>();
  const std::uint8_t* q = data + values.begin;
  const std::uint8_t* s = data + scales.begin;
  for (std::size_t g = 0; g < expected; ++g) {
    float scale;
    std::memcpy(&scale, s + 4 * g, sizeof scale);
    if (!std::isfinite(scale) || std::signbit(scale) || scale > kMaxInt8Scale) {
      throw InvalidInput(where + ": int8 scale " + std::to_string(g) + " is " +
                         format_decimal(scale) +
                         ", not a finite number in [0, FLT_MAX / 127] (127 × scale must be a "
                         "finite F32)");
    }
    const std::size_t begin = g * group;
    const std::size_t end = std::min(count, begin + group);
    for (std::size_t i = begin; i < end; ++i) {
      const auto v = static_cast<std::int8_t>(q[i]);
      if (v == -128) {
        throw InvalidInput(where + ": int8 value -128 at element " + std::to_string(i) +
                           " is outside [-127, 127]");
      }
      dst[i] = dequantize_int8(v, scale);
    }
  }
  return out;
}

DenseTensor decode_delta_varint(const CompressedTensor& t, const SafetensorsIndex& index,
                                const std::uint8_t* data, std::size_t rows) {
  const std::string where = "safetensors: " + tensor_label(t.name) + ": delta_varint row ids";
  if (t.encoding != std::string("row_sparse")) {
    throw InvalidInput("safetensors: " + tensor_label(t.name) +
                       ": ids_compression 'delta_varint' needs a row_sparse tuple");
  }
  const std::string ids_name = t.name + ":indices";
  const SafetensorsArray& ids = stored_array(index, t.name, ids_name, "ids");
  if (ids.dtype != DType::U8 || ids.shape.size() != 1) {
    throw InvalidInput(where + " must be a rank-1 U8 array, got " +
                       std::string(dtype_name(ids.dtype)) + " " + shape_to_string(ids.shape));
  }
  // Each id takes at least a byte: checked before `rows` (from the values' shape, which for rows
  // of width 0 no byte bounds) sizes anything.
  if (rows > ids.end - ids.begin) {
    throw InvalidInput(where + ": " + std::to_string(ids.end - ids.begin) +
                       " bytes cannot hold the " + std::to_string(rows) +
                       " ids the values' rows need (a byte at least each)");
  }
  DenseTensor out = DenseTensor::zeros(DType::I64, {rows});
  std::int64_t* dst = out.data<std::int64_t>();
  const std::uint8_t* p = data + ids.begin;
  const std::uint8_t* end = data + ids.end;
  std::uint64_t id = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    std::uint64_t gap = 0;
    for (int shift = 0;; shift += 7) {
      if (p == end) {
        throw InvalidInput(where + " run past the end of their " +
                           std::to_string(ids.end - ids.begin) + " bytes after " +
                           std::to_string(i) + " of the " + std::to_string(rows) +
                           " ids the values' rows need");
      }
      const std::uint8_t byte = *p++;
      gap |= std::uint64_t{byte & 0x7fu} << shift;
      if (gap > 0xffffffffu || (shift == 28 && (byte & 0x80u))) {
        throw InvalidInput(where + ": varint " + std::to_string(i) +
                           " runs past 2^32 (at most 5 bytes, below 2^32)");
      }
      if ((byte & 0x80u) == 0) break;
    }
    if (i > 0 && gap == 0) {
      throw InvalidInput(where + ": id " + std::to_string(i) + " repeats id " + std::to_string(id) +
                         " (gap 0: ids must be strictly increasing)");
    }
    id += gap;
    if (id > 0xffffffffu) {
      throw InvalidInput(where + ": id " + std::to_string(i) + " is " + std::to_string(id) +
                         ", past 2^32");
    }
    dst[i] = static_cast<std::int64_t>(id);
  }
  if (p != end) {
    throw InvalidInput(where + ": " + std::to_string(end - p) + " bytes left after the " +
                       std::to_string(rows) + " ids the values' rows need");
  }
  return out;
}

}  // namespace

std::string_view values_compression_name(ValuesCompression values) {
  switch (values) {
    case ValuesCompression::kF16:
      return "f16";
    case ValuesCompression::kInt8:
      return "int8";
    case ValuesCompression::kF32:
      break;
  }
  return "f32";
}

std::string_view ids_compression_name(IdsCompression ids) {
  switch (ids) {
    case IdsCompression::kU32:
      return "u32";
    case IdsCompression::kDeltaVarint:
      return "delta_varint";
    case IdsCompression::kI64:
      break;
  }
  return "i64";
}

std::optional<ValuesCompression> parse_values_compression(std::string_view name) {
  for (const auto v : kValuesCompressions) {
    if (values_compression_name(v) == name) return v;
  }
  return std::nullopt;
}

std::optional<IdsCompression> parse_ids_compression(std::string_view name) {
  for (const auto v : kIdsCompressions) {
    if (ids_compression_name(v) == name) return v;
  }
  return std::nullopt;
}

std::string values_compression_key(const std::string& tensor) {
  return tensor + std::string(kValuesCompressionSuffix);
}
std::string ids_compression_key(const std::string& tensor) {
  return tensor + std::string(kIdsCompressionSuffix);
}
std::string scales_array_name(const std::string& tensor) { return tensor + ":scales"; }

std::size_t int8_group_values(bool row_sparse_rows, std::size_t row_size) {
  return row_sparse_rows ? std::max<std::size_t>(1, row_size) : kInt8BlockValues;
}

std::size_t int8_scale_count(std::size_t values, std::size_t group_values) {
  return (values + group_values - 1) / group_values;
}

float int8_scale(const float* values, std::size_t n) {
  float absmax = 0.0f;
  for (std::size_t i = 0; i < n; ++i) absmax = std::max(absmax, std::fabs(values[i]));
  return absmax / 127.0f;
}

void quantize_int8(const float* values, std::size_t n, float scale, std::int8_t* out) {
  if (scale == 0.0f) {
    std::fill(out, out + n, std::int8_t{0});
    return;
  }
  const double divisor = scale;
  for (std::size_t i = 0; i < n; ++i) {
    const double q = std::round(static_cast<double>(values[i]) / divisor);
    out[i] = static_cast<std::int8_t>(std::clamp(q, -127.0, 127.0));
  }
}

float dequantize_int8(std::int8_t q, float scale) {
  return static_cast<float>(static_cast<double>(q) * static_cast<double>(scale));
}

std::size_t varint_size(std::uint32_t value) {
  std::size_t n = 1;
  while (value >= 0x80u) {
    value >>= 7;
    ++n;
  }
  return n;
}

std::size_t put_varint(std::uint32_t value, std::uint8_t* out) {
  std::size_t n = 0;
  while (value >= 0x80u) {
    out[n++] = static_cast<std::uint8_t>(value | 0x80u);
    value >>= 7;
  }
  out[n++] = static_cast<std::uint8_t>(value);
  return n;
}

DecodedArrays decode_compressed_arrays(const SafetensorsIndex& index, const std::uint8_t* data,
                                       Metadata& metadata) {
  DecodedArrays out;
  for (const auto& [tensor, t] : compressed_tensors(metadata)) {
    const std::string values_name = t.encoding ? tensor + ":values" : tensor;
    const SafetensorsArray& values = stored_array(index, tensor, values_name, "values");
    const std::string where = "safetensors: " + tensor_label(tensor);
    switch (t.compression.values) {
      case ValuesCompression::kF32:
        break;
      case ValuesCompression::kF16: {
        if (values.dtype != DType::F16) {
          throw InvalidInput(where + ": values_compression 'f16' needs an F16 array, got " +
                             std::string(dtype_name(values.dtype)));
        }
        DenseTensor widened = DenseTensor::zeros(DType::F32, values.shape);
        widen_to_f32(DType::F16, data + values.begin, widened.size(), widened.data<float>());
        out.arrays.emplace(values_name, std::move(widened));
        out.consumed.insert(values_name);
        break;
      }
      case ValuesCompression::kInt8:
        if (values.dtype != DType::I8) {
          throw InvalidInput(where + ": values_compression 'int8' needs an I8 array, got " +
                             std::string(dtype_name(values.dtype)));
        }
        out.arrays.emplace(values_name, decode_int8(t, index, data, values, out.consumed));
        out.consumed.insert(values_name);
        break;
    }
    if (t.compression.ids == IdsCompression::kDeltaVarint) {
      const std::size_t rows = values.shape.empty() ? 1 : values.shape[0];
      out.arrays.emplace(tensor + ":indices", decode_delta_varint(t, index, data, rows));
      out.consumed.insert(tensor + ":indices");
    }
  }
  return out;
}

}  // namespace fedleaf::core
