#include "core/safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/coalesce.h"
#include "core/text_format.h"

namespace fedleaf::core {
namespace {

using nlohmann::json;

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
  const std::uint8_t* indices(const std::int64_t* data, std::size_t count, DType wire,
                              const std::string& name) {
    if (wire == DType::I64) return reinterpret_cast<const std::uint8_t*>(data);
    auto narrowed = std::make_unique<std::vector<std::int32_t>>(count);
    for (std::size_t i = 0; i < count; ++i) {
      if (data[i] > std::numeric_limits<std::int32_t>::max()) {
        throw InvalidInput(name + ": index " + std::to_string(data[i]) +
                           " does not fit the I32 index dtype");
      }
      (*narrowed)[i] = static_cast<std::int32_t>(data[i]);
    }
    const auto* p = reinterpret_cast<const std::uint8_t*>(narrowed->data());
    int32_.push_back(std::move(narrowed));
    return p;
  }
  const std::uint8_t* dense_shape(const DenseShape& shape) {
    dense_shapes_.push_back(std::make_unique<DenseShape>(shape));
    return reinterpret_cast<const std::uint8_t*>(dense_shapes_.back()->data());
  }

 private:
  std::vector<std::unique_ptr<std::vector<std::int32_t>>> int32_;
  std::vector<std::unique_ptr<DenseShape>> dense_shapes_;
};

void flatten(const std::string& name, const Tensor& tensor, WireBuffers& buffers,
             std::vector<StoredArray>& out) {
  if (const auto* dense = std::get_if<DenseTensor>(&tensor)) {
    out.push_back({name, dense->dtype(), dense->shape(), dense->raw_data(), dense->nbytes()});
    return;
  }
  const auto add_components = [&](const auto& sparse, Shape index_shape, std::size_t index_count) {
    const DType wire = sparse.index_dtype();
    out.push_back({name + std::string(kIndicesSuffix), wire, std::move(index_shape),
                   buffers.indices(sparse.indices().data(), index_count, wire, name),
                   index_count * dtype_size(wire)});
    const DenseTensor& v = sparse.values();
    out.push_back(
        {name + std::string(kValuesSuffix), v.dtype(), v.shape(), v.raw_data(), v.nbytes()});
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

std::uint64_t read_le_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

struct HeaderEntry {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t begin;
  std::uint64_t end;
};

std::uint64_t read_unsigned(const json& value, const std::string& what) {
  if (!value.is_number_unsigned()) {
    throw InvalidInput(what + " must be a non-negative integer");
  }
  return value.get<std::uint64_t>();
}

HeaderEntry parse_entry(const std::string& name, const json& entry) {
  const std::string where = "safetensors: tensor " + in_quotes(name);
  if (!entry.is_object()) throw InvalidInput(where + ": header entry must be a JSON object");
  for (const auto& [key, _] : entry.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      throw InvalidInput(where + ": unknown header field " + in_quotes(key));
    }
  }
  const auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    throw InvalidInput(where + ": header entry needs a string 'dtype'");
  }
  HeaderEntry out{name, parse_dtype(dtype_it->get<std::string>(), where), {}, 0, 0};
  const auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) {
    throw InvalidInput(where + ": header entry needs an array 'shape'");
  }
  for (const json& d : *shape_it) {
    const std::uint64_t dim = read_unsigned(d, where + ": every shape dimension");
    if (dim > std::numeric_limits<std::size_t>::max()) {
      throw InvalidInput(where + ": shape dimension " + std::to_string(dim) + " is too large");
    }
    out.shape.push_back(static_cast<std::size_t>(dim));
  }
  const auto offsets_it = entry.find("data_offsets");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
    throw InvalidInput(where + ": header entry needs 'data_offsets' [begin, end]");
  }
  out.begin = read_unsigned((*offsets_it)[0], where + ": data_offsets begin");
  out.end = read_unsigned((*offsets_it)[1], where + ": data_offsets end");
  if (out.begin > out.end) {
    throw InvalidInput(where + ": data_offsets begin " + std::to_string(out.begin) +
                       " is after end " + std::to_string(out.end));
  }
  const std::size_t count = shape_element_count(out.shape, where);
  const std::size_t size = dtype_size(out.dtype);
  if (count > std::numeric_limits<std::uint64_t>::max() / size ||
      count * size != out.end - out.begin) {
    throw InvalidInput(where + ": data_offsets [" + std::to_string(out.begin) + ", " +
                       std::to_string(out.end) + "] hold " + std::to_string(out.end - out.begin) +
                       " bytes but shape " + shape_to_string(out.shape) + " of " +
                       std::string(dtype_name(out.dtype)) + " needs " +
                       (count > std::numeric_limits<std::uint64_t>::max() / size
                            ? std::string("more than fit in memory")
                            : std::to_string(count * size)));
  }
  return out;
}

void check_layout(std::vector<HeaderEntry>& entries, std::uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const HeaderEntry& a, const HeaderEntry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::uint64_t cursor = 0;
  for (const HeaderEntry& e : entries) {
    const std::string where = "safetensors: tensor " + in_quotes(e.name);
    if (e.end > data_size) {
      throw InvalidInput(where + ": data_offsets end " + std::to_string(e.end) +
                         " is out of bounds of the " + std::to_string(data_size) +
                         "-byte data section");
    }
    if (e.begin < cursor) {
      throw InvalidInput(where + ": data_offsets [" + std::to_string(e.begin) + ", " +
                         std::to_string(e.end) + "] overlap the previous tensor");
    }
    if (e.begin > cursor) {
      throw InvalidInput(where + ": data_offsets begin " + std::to_string(e.begin) +
                         " leaves a gap after byte " + std::to_string(cursor));
    }
    cursor = e.end;
  }
  if (cursor != data_size) {
    throw InvalidInput("safetensors: tensors cover " + std::to_string(cursor) + " of the " +
                       std::to_string(data_size) + " data bytes (trailing bytes)");
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
      for (std::size_t i = 0; i < t.size(); ++i) {
        if (!std::isfinite(p[i])) {
          throw InvalidInput("safetensors: tensor " + in_quotes(name) + ": element " +
                             std::to_string(i) + " is not finite (NaN or infinity)");
        }
      }
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

std::vector<std::uint8_t> write_safetensors(const NamedTensors& tensors, const Metadata& metadata) {
  WireBuffers buffers;
  std::vector<StoredArray> arrays;
  json meta = json::object();
  for (const auto& [key, value] : metadata) {
    if (ends_with(key, kEncodingSuffix)) {
      throw InvalidInput("safetensors: metadata key " + in_quotes(key) +
                         " is reserved for sparse tensor encodings");
    }
    meta[key] = value;
  }
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name == kMetadataKey) {
      throw InvalidInput("safetensors: invalid tensor name " + in_quotes(name));
    }
    flatten(name, tensor, buffers, arrays);
    if (tensor.index() != 0) meta[name + std::string(kEncodingSuffix)] = encoding_name(tensor);
  }
  std::sort(arrays.begin(), arrays.end(), [](const StoredArray& a, const StoredArray& b) {
    const std::size_t sa = dtype_size(a.dtype), sb = dtype_size(b.dtype);
    return sa != sb ? sa > sb : a.name < b.name;
  });
  json header = json::object();
  std::uint64_t offset = 0;
  for (const StoredArray& a : arrays) {
    if (header.contains(a.name)) {
      throw InvalidInput("safetensors: tensor name " + in_quotes(a.name) +
                         " is used twice (a dense tensor collides with a sparse component)");
    }
    header[a.name] = {{"dtype", dtype_name(a.dtype)},
                      {"shape", a.shape},
                      {"data_offsets", {offset, offset + a.nbytes}}};
    offset += a.nbytes;
  }
  if (!meta.empty()) header[std::string(kMetadataKey)] = std::move(meta);
  std::string text;
  try {
    text = header.dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const json::exception&) {
    throw InvalidInput("safetensors: tensor names and metadata must be valid UTF-8");
  }
  text.resize((text.size() + 7) / 8 * 8, ' ');
  std::vector<std::uint8_t> out(8 + text.size() + static_cast<std::size_t>(offset));
  const std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, text.data(), text.size());
  std::uint8_t* data = out.data() + 8 + text.size();
  for (const StoredArray& a : arrays) {
    if (a.nbytes) std::memcpy(data, a.bytes, a.nbytes);
    data += a.nbytes;
  }
  return out;
}

SafetensorsFile read_safetensors(const std::uint8_t* data, std::size_t size,
                                 const SafetensorsReadOptions& options) {
  if (size < 8) {
    throw InvalidInput("safetensors: truncated input: " + std::to_string(size) +
                       " bytes, fewer than the 8-byte header length");
  }
  const std::uint64_t header_size = read_le_u64(data);
  if (header_size > kMaxSafetensorsHeaderBytes) {
    throw InvalidInput("safetensors: header length " + std::to_string(header_size) +
                       " exceeds the limit of " + std::to_string(kMaxSafetensorsHeaderBytes) +
                       " bytes");
  }
  if (header_size > size - 8) {
    throw InvalidInput("safetensors: header length " + std::to_string(header_size) +
                       " exceeds the " + std::to_string(size - 8) + " bytes after it (truncated)");
  }
  const char* header_begin = reinterpret_cast<const char*>(data + 8);
  const json header = json::parse(header_begin, header_begin + header_size, nullptr, false);
  if (header.is_discarded() || !header.is_object()) {
    throw InvalidInput("safetensors: header is not a valid JSON object");
  }
  SafetensorsFile file;
  std::vector<HeaderEntry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      if (!value.is_object()) throw InvalidInput("safetensors: __metadata__ must be a JSON object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) {
          throw InvalidInput("safetensors: __metadata__ value of " + in_quotes(mk) +
                             " must be a string");
        }
        file.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(key, value));
  }
  const std::uint8_t* payload = data + 8 + header_size;
  const std::uint64_t payload_size = size - 8 - header_size;
  check_layout(entries, payload_size);

  std::map<std::string, DenseTensor> dense;
  for (const HeaderEntry& e : entries) {
    dense.emplace(e.name, DenseTensor::from_bytes(e.dtype, e.shape, payload + e.begin,
                                                  static_cast<std::size_t>(e.end - e.begin),
                                                  "tensor " + in_quotes(e.name)));
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
