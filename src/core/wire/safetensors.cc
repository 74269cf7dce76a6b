#include "core/wire/safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "core/tensor/coalesce.h"
#include "core/tensor/half_float.h"
#include "core/text/text_format.h"
#include "core/wire/safetensors_index.h"
#include "core/wire/safetensors_layout.h"
#include "core/wire/update_compression.h"

namespace fedleaf::core {
namespace {

constexpr std::string_view kMetadataKey = "__metadata__";
constexpr std::string_view kEncodingSuffix = ":encoding";
constexpr std::string_view kIndicesSuffix = ":indices";
constexpr std::string_view kValuesSuffix = ":values";
constexpr std::string_view kDenseShapeSuffix = ":dense_shape";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// One stored array: a dense tensor or one component of a sparse tuple.
struct StoredArray {
  std::string name;
  DType dtype;
  Shape shape;
  const std::uint8_t* bytes;
  std::size_t nbytes;
};

// Index arrays converted to the wire dtype outlive the StoredArrays that point into them.
class WireBuffers {
 public:
  // `wire` is I64 (the tensor's own array), I32 or U32 (narrowed; an index that does not fit
  // throws naming `name`).
  const std::uint8_t* indices(const std::int64_t* data, std::size_t count, DType wire,
                              const std::string& name) {
    if (wire == DType::I64) return reinterpret_cast<const std::uint8_t*>(data);
    const bool u32 = wire == DType::U32;
    const std::int64_t max = u32 ? std::int64_t{std::numeric_limits<std::uint32_t>::max()}
                                 : std::int64_t{std::numeric_limits<std::int32_t>::max()};
    auto narrowed = std::make_unique<std::vector<std::uint32_t>>(count);
    for (std::size_t i = 0; i < count; ++i) {
      if (data[i] > max || data[i] < 0) {
        throw InvalidInput(name + ": index " + std::to_string(data[i]) + " does not fit the " +
                           std::string(dtype_name(wire)) + " index dtype");
      }
      (*narrowed)[i] = static_cast<std::uint32_t>(data[i]);
    }
    const auto* p = reinterpret_cast<const std::uint8_t*>(narrowed->data());
    narrowed_.push_back(std::move(narrowed));
    return p;
  }
  const std::uint8_t* keep(std::vector<std::uint8_t> bytes) {
    bytes_.push_back(std::make_unique<std::vector<std::uint8_t>>(std::move(bytes)));
    return bytes_.back()->data();
  }
  const std::uint8_t* dense_shape(const DenseShape& shape) {
    dense_shapes_.push_back(std::make_unique<DenseShape>(shape));
    return reinterpret_cast<const std::uint8_t*>(dense_shapes_.back()->data());
  }

 private:
  std::vector<std::unique_ptr<std::vector<std::uint32_t>>> narrowed_;
  std::vector<std::unique_ptr<DenseShape>> dense_shapes_;
  std::vector<std::unique_ptr<std::vector<std::uint8_t>>> bytes_;
};

// The stored form of values `v` (array `name` of tensor `tensor`) under `values`: itself, or
// F16, or I8 with the F32 scales array (update_compression.h).
void add_values(const std::string& tensor, const std::string& name, const DenseTensor& v,
                ValuesCompression values, bool row_sparse, WireBuffers& buffers,
                std::vector<StoredArray>& out) {
  if (values == ValuesCompression::kF32) {
    out.push_back({name, v.dtype(), v.shape(), v.raw_data(), v.nbytes()});
    return;
  }
  const std::string where = "safetensors: tensor " + in_quotes(tensor);
  if (v.dtype() != DType::F32) {
    throw InvalidInput(where + ": values_compression " +
                       in_quotes(values_compression_name(values)) + " needs F32 values, got " +
                       std::string(dtype_name(v.dtype())));
  }
  const float* x = v.data<float>();
  const std::size_t n = v.size();
  if (values == ValuesCompression::kF16) {
    std::vector<std::uint8_t> halves(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint16_t h = f32_to_f16(x[i]);
      if ((h & 0x7c00u) == 0x7c00u) {
        throw InvalidInput(where + ": value " + std::to_string(i) + " (" + format_decimal(x[i]) +
                           ") is not a finite F16 (|v| < 65520); use values \"f32\" or \"int8\"");
      }
      halves[2 * i] = static_cast<std::uint8_t>(h);
      halves[2 * i + 1] = static_cast<std::uint8_t>(h >> 8);
    }
    out.push_back({name, DType::F16, v.shape(), buffers.keep(std::move(halves)), 2 * n});
    return;
  }
  const bool rows = row_sparse && v.rank() >= 2;
  const std::size_t group = int8_group_values(rows, rows && v.shape()[0] ? n / v.shape()[0] : 0);
  const std::size_t count = rows ? v.shape()[0] : int8_scale_count(n, group);
  std::vector<std::uint8_t> scales(4 * count);
  std::vector<std::uint8_t> q(n);
  for (std::size_t g = 0; g < count; ++g) {
    const std::size_t begin = g * group;
    const std::size_t size = std::min(n, begin + group) - begin;
    const float scale = int8_scale(x + begin, size);
    std::memcpy(scales.data() + 4 * g, &scale, 4);
    quantize_int8(x + begin, size, scale, reinterpret_cast<std::int8_t*>(q.data() + begin));
  }
  out.push_back({name, DType::I8, v.shape(), buffers.keep(std::move(q)), n});
  out.push_back(
      {scales_array_name(tensor), DType::F32, {count}, buffers.keep(std::move(scales)), 4 * count});
}

// Sorted unique row ids as LEB128 varints of their gaps (update_compression.h).
std::vector<std::uint8_t> delta_varint_ids(const std::string& tensor, const RowIndices& ids) {
  std::vector<std::uint8_t> out;
  out.reserve(ids.size() * 2);
  std::uint8_t buffer[5];
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int64_t id = ids(i);
    const std::int64_t previous = i == 0 ? 0 : ids(i - 1);
    if (id < 0 || id > 0xffffffff || (i > 0 && id <= previous)) {
      throw InvalidInput("safetensors: tensor " + in_quotes(tensor) +
                         ": ids_compression 'delta_varint' needs strictly increasing row ids "
                         "below 2^32, got " +
                         std::to_string(id) + " at entry " + std::to_string(i));
    }
    const std::size_t n = put_varint(static_cast<std::uint32_t>(id - previous), buffer);
    out.insert(out.end(), buffer, buffer + n);
  }
  return out;
}

void flatten(const std::string& name, const Tensor& tensor, const TensorCompression& compression,
             WireBuffers& buffers, std::vector<StoredArray>& out) {
  const bool row_sparse = std::holds_alternative<RowSparseTensor>(tensor);
  if (compression.ids == IdsCompression::kDeltaVarint && !row_sparse) {
    throw InvalidInput("safetensors: tensor " + in_quotes(name) +
                       ": ids_compression 'delta_varint' needs a row_sparse tuple");
  }
  if (compression.ids == IdsCompression::kU32 && tensor.index() == 0) {
    throw InvalidInput("safetensors: tensor " + in_quotes(name) +
                       ": ids_compression 'u32' needs a sparse tuple (a dense tensor has no ids)");
  }
  if (const auto* dense = std::get_if<DenseTensor>(&tensor)) {
    add_values(name, name, *dense, compression.values, false, buffers, out);
    return;
  }
  const auto add_components = [&](const auto& sparse, Shape index_shape, std::size_t index_count) {
    if (compression.ids == IdsCompression::kDeltaVarint) {
      std::vector<std::uint8_t> ids =
          delta_varint_ids(name, std::get<RowSparseTensor>(tensor).indices());
      const std::size_t size = ids.size();
      out.push_back({name + std::string(kIndicesSuffix),
                     DType::U8,
                     {size},
                     buffers.keep(std::move(ids)),
                     size});
    } else {
      const DType wire =
          compression.ids == IdsCompression::kU32 ? DType::U32 : sparse.index_dtype();
      out.push_back({name + std::string(kIndicesSuffix), wire, std::move(index_shape),
                     buffers.indices(sparse.indices().data(), index_count, wire, name),
                     index_count * dtype_size(wire)});
    }
    add_values(name, name + std::string(kValuesSuffix), sparse.values(), compression.values,
               row_sparse, buffers, out);
    out.push_back({name + std::string(kDenseShapeSuffix),
                   DType::I64,
                   {sparse.dense_shape().size()},
                   buffers.dense_shape(sparse.dense_shape()),
                   sparse.dense_shape().size() * 8});
  };
  if (const auto* coo = std::get_if<SparseTensor>(&tensor)) {
    add_components(*coo, Shape{coo->nnz(), coo->rank()}, coo->indices().size());
  } else {
    const auto& rows = std::get<RowSparseTensor>(tensor);
    add_components(rows, Shape{rows.num_rows()}, rows.num_rows());
  }
}

DenseTensor take(std::map<std::string, DenseTensor>& dense, const std::string& name,
                 const std::string& base) {
  const auto it = dense.find(name);
  if (it == dense.end()) {
    throw InvalidInput("safetensors: sparse tensor " + in_quotes(base) + " is missing component " +
                       in_quotes(name));
  }
  DenseTensor t = std::move(it->second);
  dense.erase(it);
  return t;
}

std::vector<std::int64_t> to_int64(const DenseTensor& t, const std::string& what) {
  if (!is_index_dtype(t.dtype())) {
    throw InvalidInput(what + " must have dtype I32 or I64, got " +
                       std::string(dtype_name(t.dtype())));
  }
  std::vector<std::int64_t> out(t.size());
  if (t.dtype() == DType::I64) {
    std::copy_n(t.data<std::int64_t>(), t.size(), out.begin());
  } else {
    std::copy_n(t.data<std::int32_t>(), t.size(), out.begin());
  }
  return out;
}

Tensor assemble_sparse(const std::string& base, const std::string& encoding,
                       std::map<std::string, DenseTensor>& dense) {
  const std::string where = "safetensors: sparse tensor " + in_quotes(base);
  if (encoding != "coo" && encoding != "row_sparse") {
    throw InvalidInput(where + ": unknown encoding " + in_quotes(encoding) +
                       " (expected 'coo' or 'row_sparse')");
  }
  DenseTensor indices = take(dense, base + std::string(kIndicesSuffix), base);
  DenseTensor values = take(dense, base + std::string(kValuesSuffix), base);
  DenseTensor shape = take(dense, base + std::string(kDenseShapeSuffix), base);
  if (shape.rank() != 1) throw InvalidInput(where + ": dense_shape must be rank 1");
  const DenseShape dense_shape = to_int64(shape, where + ": dense_shape");
  const std::vector<std::int64_t> idx = to_int64(indices, where + ": indices");
  const Shape ishape = indices.shape();
  const std::string name = "sparse tensor " + in_quotes(base);
  if (encoding == "coo") {
    if (ishape.size() != 2) {
      throw InvalidInput(where + ": indices must have shape [nnz, rank], got " +
                         shape_to_string(ishape));
    }
    CooIndices coo = CooIndices::from_shape({ishape[0], ishape[1]});
    std::copy(idx.begin(), idx.end(), coo.begin());
    SparseTensor out(std::move(coo), std::move(values), dense_shape, name);
    out.set_index_dtype(indices.dtype());
    return out;
  }
  if (ishape.size() != 1) {
    throw InvalidInput(where + ": indices must have shape [nrows], got " + shape_to_string(ishape));
  }
  RowIndices rows = RowIndices::from_shape({ishape[0]});
  std::copy(idx.begin(), idx.end(), rows.begin());
  RowSparseTensor out(std::move(rows), std::move(values), dense_shape, name);
  out.set_index_dtype(indices.dtype());
  return out;
}

void check_finite(const std::string& name, const DenseTensor& t) {
  if (!is_floating(t.dtype())) return;
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* p = t.data<T>();
      // Every upload's values pass here: a branch-free scan over a hoisted count (it
      // vectorizes; DenseTensor::size() is out of line), the culprit located only when there is
      // one. Per element with size() in the condition it cost ~7% of the server's CPU.
      const std::size_t count = t.size();
      bool finite = true;
      for (std::size_t i = 0; i < count; ++i) finite &= std::isfinite(p[i]);
      if (finite) return;
      std::size_t i = 0;
      while (std::isfinite(p[i])) ++i;
      throw InvalidInput("safetensors: tensor " + in_quotes(name) + ": element " +
                         std::to_string(i) + " is not finite (NaN or infinity)");
    }
  });
}

void check_options(const std::string& name, const Tensor& tensor,
                   const SafetensorsReadOptions& options) {
  std::visit(
      [&](const auto& t) {
        using T = std::decay_t<decltype(t)>;
        if constexpr (std::is_same_v<T, DenseTensor>) {
          if (options.require_finite) check_finite(name, t);
        } else {
          if (options.require_finite) check_finite(name + std::string(kValuesSuffix), t.values());
          if (options.require_canonical && !is_canonical(t)) {
            throw InvalidInput("safetensors: sparse tensor " + in_quotes(name) +
                               ": indices are not sorted and unique (canonical input required)");
          }
        }
      },
      tensor);
}

}  // namespace

namespace {

// The file's bytes in a new `Bytes` (a byte vector or a string): one buffer of the file's size,
// the header and each array copied into it once.
template <class Bytes>
Bytes write_safetensors_as(const NamedTensors& tensors, const Metadata& metadata,
                           const CompressionByTensor& compression) {
  WireBuffers buffers;
  std::vector<StoredArray> arrays;
  Metadata meta;
  for (const auto& [key, value] : metadata) {
    if (ends_with(key, kEncodingSuffix) || ends_with(key, ":values_compression") ||
        ends_with(key, ":ids_compression")) {
      throw InvalidInput("safetensors: metadata key " + in_quotes(key) +
                         " is reserved for tensor encodings");
    }
    meta[key] = value;
  }
  for (const auto& [name, c] : compression) {
    if (!tensors.count(name)) {
      throw InvalidInput("safetensors: compression names " + in_quotes(name) +
                         ", which is not a tensor of the file");
    }
  }
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name == kMetadataKey) {
      throw InvalidInput("safetensors: invalid tensor name " + in_quotes(name));
    }
    const auto c = compression.find(name);
    const TensorCompression how = c == compression.end() ? TensorCompression{} : c->second;
    flatten(name, tensor, how, buffers, arrays);
    if (tensor.index() != 0) {
      meta[name + std::string(kEncodingSuffix)] = std::string(encoding_name(tensor));
    }
    if (how.values != ValuesCompression::kF32) {
      meta[values_compression_key(name)] = std::string(values_compression_name(how.values));
    }
    if (how.ids == IdsCompression::kDeltaVarint) {  // U32 ids say so by their dtype
      meta[ids_compression_key(name)] = std::string(ids_compression_name(how.ids));
    }
  }
  std::vector<SafetensorsArraySpec> specs;
  specs.reserve(arrays.size());
  for (const StoredArray& a : arrays) specs.push_back({a.name, a.dtype, a.shape});
  const SafetensorsLayout layout = layout_safetensors(specs, meta);
  Bytes out(static_cast<std::size_t>(layout.file_size), 0);
  auto* data = reinterpret_cast<std::uint8_t*>(&out[0]);
  // std::copy, not memcpy: Bytes may be a std::string, whose bytes are not a C string here.
  std::copy(layout.header.begin(), layout.header.end(), data);
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i].nbytes) std::memcpy(data + layout.offsets[i], arrays[i].bytes, arrays[i].nbytes);
  }
  return out;
}

}  // namespace

std::vector<std::uint8_t> write_safetensors(const NamedTensors& tensors, const Metadata& metadata,
                                            const CompressionByTensor& compression) {
  return write_safetensors_as<std::vector<std::uint8_t>>(tensors, metadata, compression);
}

std::string write_safetensors_string(const NamedTensors& tensors, const Metadata& metadata,
                                     const CompressionByTensor& compression) {
  return write_safetensors_as<std::string>(tensors, metadata, compression);
}

SafetensorsFile read_safetensors(const std::uint8_t* data, std::size_t size,
                                 const SafetensorsReadOptions& options) {
  return read_safetensors(index_safetensors(data, size), data, options);
}

SafetensorsFile read_safetensors(const SafetensorsIndex& index, const std::uint8_t* data,
                                 const SafetensorsReadOptions& options) {
  SafetensorsFile file;
  file.metadata = index.metadata;
  DecodedArrays decoded = decode_compressed_arrays(index, data, file.metadata);
  std::map<std::string, DenseTensor> dense = std::move(decoded.arrays);
  for (const auto& [name, a] : index.arrays) {
    if (decoded.consumed.count(name)) continue;
    if (a.dtype == DType::I8) {
      throw InvalidInput("safetensors: tensor " + in_quotes(name) +
                         ": an I8 array holds int8-compressed values and needs a "
                         "'<tensor>:values_compression' of 'int8' in the metadata");
    }
    if (a.dtype == DType::U32) {
      // Ids "u32": a sparse tuple's index array, widened to I64 (assemble_sparse then checks
      // them against the dense_shape like any other ids).
      if (!ends_with(name, kIndicesSuffix)) {
        throw InvalidInput("safetensors: tensor " + in_quotes(name) +
                           ": a U32 array holds the ids of a sparse tuple ('<tensor>:indices') "
                           "and nothing else");
      }
      DenseTensor widened = DenseTensor::zeros(DType::I64, a.shape);
      std::int64_t* dst = widened.data<std::int64_t>();
      for (std::size_t i = 0; i < widened.size(); ++i) {
        std::uint32_t id;
        std::memcpy(&id, data + a.begin + 4 * i, sizeof id);
        dst[i] = id;
      }
      dense.emplace(name, std::move(widened));
      continue;
    }
    if (is_half_float(a.dtype)) {
      DenseTensor widened = DenseTensor::zeros(DType::F32, a.shape);
      widen_to_f32(a.dtype, data + a.begin, widened.size(), widened.data<float>());
      dense.emplace(name, std::move(widened));
      continue;
    }
    dense.emplace(name, DenseTensor::from_bytes(a.dtype, a.shape, data + a.begin,
                                                static_cast<std::size_t>(a.end - a.begin),
                                                "tensor " + in_quotes(name)));
  }
  for (auto it = file.metadata.begin(); it != file.metadata.end();) {
    if (ends_with(it->first, kEncodingSuffix)) {
      const std::string base = it->first.substr(0, it->first.size() - kEncodingSuffix.size());
      if (dense.count(base)) {
        throw InvalidInput("safetensors: " + in_quotes(base) +
                           " is both a dense tensor and a sparse tuple");
      }
      file.tensors.emplace(base, assemble_sparse(base, it->second, dense));
      it = file.metadata.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [name, tensor] : dense) file.tensors.emplace(name, std::move(tensor));
  for (const auto& [name, tensor] : file.tensors) check_options(name, tensor, options);
  return file;
}

}  // namespace fedleaf::core
