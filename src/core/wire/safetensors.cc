#include "core/wire/safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "core/tensor/coalesce.h"
#include "core/tensor/half_float.h"
#include "core/wire/safetensors_index.h"
#include "core/wire/safetensors_layout.h"
#include "core/wire/text_format.h"

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
  Metadata meta;
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
    if (tensor.index() != 0) {
      meta[name + std::string(kEncodingSuffix)] = std::string(encoding_name(tensor));
    }
  }
  std::vector<SafetensorsArraySpec> specs;
  specs.reserve(arrays.size());
  for (const StoredArray& a : arrays) specs.push_back({a.name, a.dtype, a.shape});
  const SafetensorsLayout layout = layout_safetensors(specs, meta);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(layout.file_size));
  std::memcpy(out.data(), layout.header.data(), layout.header.size());
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i].nbytes)
      std::memcpy(out.data() + layout.offsets[i], arrays[i].bytes, arrays[i].nbytes);
  }
  return out;
}

SafetensorsFile read_safetensors(const std::uint8_t* data, std::size_t size,
                                 const SafetensorsReadOptions& options) {
  SafetensorsIndex index = index_safetensors(data, size);
  SafetensorsFile file;
  file.metadata = std::move(index.metadata);
  std::map<std::string, DenseTensor> dense;
  for (const auto& [name, a] : index.arrays) {
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
