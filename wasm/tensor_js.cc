#include "tensor_js.h"

#include <cstring>

#include "core/error.h"

namespace fedleaf::wasm {
namespace {

using core::DenseTensor;
using core::DType;

std::string string_field(const val& spec, const char* field, const std::string& where) {
  const val v = spec[field];
  if (!v.isString()) throw InvalidInput(where + ": field '" + field + "' must be a string");
  return v.as<std::string>();
}

DenseTensor dense_from_js(const val& spec, const std::string& where) {
  const DType dtype = core::parse_dtype(string_field(spec, "dtype", where), where + ".dtype");
  const core::Shape shape = shape_from_js(spec["shape"], where + ".shape");
  const std::vector<std::uint8_t> bytes = bytes_from_js(spec["data"]);
  return DenseTensor::from_bytes(dtype, shape, bytes.data(), bytes.size(), where);
}

val dense_to_js(const DenseTensor& t) {
  val out = val::object();
  out.set("dtype", std::string(core::dtype_name(t.dtype())));
  out.set("shape", shape_to_js(t.shape()));
  out.set("data", bytes_to_js(t.raw_data(), t.nbytes()));
  return out;
}

std::vector<std::int64_t> indices_from_js(const val& spec, const std::string& where,
                                          DType& index_dtype) {
  index_dtype = core::parse_dtype(string_field(spec, "index_dtype", where), where + ".index_dtype");
  if (!core::is_index_dtype(index_dtype)) {
    throw InvalidInput(where + ".index_dtype must be I32 or I64");
  }
  const std::vector<std::uint8_t> bytes = bytes_from_js(spec["indices"]);
  const std::size_t width = core::dtype_size(index_dtype);
  if (bytes.size() % width != 0) {
    throw InvalidInput(where + ".indices: byte length is not a multiple of " +
                       std::to_string(width));
  }
  std::vector<std::int64_t> out(bytes.size() / width);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (index_dtype == DType::I64) {
      std::memcpy(&out[i], bytes.data() + 8 * i, 8);
    } else {
      std::int32_t v;
      std::memcpy(&v, bytes.data() + 4 * i, 4);
      out[i] = v;
    }
  }
  return out;
}

val indices_to_js(const std::int64_t* data, std::size_t count, DType index_dtype) {
  if (index_dtype == DType::I64) {
    return bytes_to_js(reinterpret_cast<const std::uint8_t*>(data), count * 8);
  }
  std::vector<std::int32_t> narrow(data, data + count);
  return bytes_to_js(reinterpret_cast<const std::uint8_t*>(narrow.data()), count * 4);
}

}  // namespace

core::Tensor tensor_from_js(const std::string& name, const val& spec) {
  const std::string where = "tensor '" + name + "'";
  if (spec.isNull() || spec.typeOf().as<std::string>() != "object") {
    throw InvalidInput(where + " must be an object");
  }
  const std::string encoding = string_field(spec, "encoding", where);
  if (encoding == "dense") return dense_from_js(spec, where);
  if (encoding != "coo" && encoding != "row_sparse") {
    throw InvalidInput(where + ": unknown encoding '" + encoding +
                       "' (expected dense, coo or row_sparse)");
  }
  const core::Shape dense_shape_u = shape_from_js(spec["dense_shape"], where + ".dense_shape");
  const core::DenseShape dense_shape(dense_shape_u.begin(), dense_shape_u.end());
  DType index_dtype;
  const std::vector<std::int64_t> idx = indices_from_js(spec, where, index_dtype);
  DenseTensor values = dense_from_js(spec["values"], where + ".values");
  if (encoding == "coo") {
    const std::size_t rank = dense_shape.size();
    if (rank == 0 ? !idx.empty() : idx.size() % rank != 0) {
      throw InvalidInput(where + ".indices: length " + std::to_string(idx.size()) +
                         " is not a multiple of the rank " + std::to_string(rank));
    }
    core::CooIndices coo = core::CooIndices::from_shape({rank ? idx.size() / rank : 0, rank});
    std::copy(idx.begin(), idx.end(), coo.begin());
    core::SparseTensor out(std::move(coo), std::move(values), dense_shape, where);
    out.set_index_dtype(index_dtype);
    return out;
  }
  core::RowIndices rows = core::RowIndices::from_shape({idx.size()});
  std::copy(idx.begin(), idx.end(), rows.begin());
  core::RowSparseTensor out(std::move(rows), std::move(values), dense_shape, where);
  out.set_index_dtype(index_dtype);
  return out;
}

val tensor_to_js(const core::Tensor& tensor) {
  val out = val::object();
  out.set("encoding", std::string(core::encoding_name(tensor)));
  if (const auto* dense = std::get_if<DenseTensor>(&tensor)) {
    out.set("dtype", std::string(core::dtype_name(dense->dtype())));
    out.set("shape", shape_to_js(dense->shape()));
    out.set("data", bytes_to_js(dense->raw_data(), dense->nbytes()));
    return out;
  }
  std::visit(
      [&](const auto& sparse) {
        using T = std::decay_t<decltype(sparse)>;
        if constexpr (!std::is_same_v<T, DenseTensor>) {
          out.set("index_dtype", std::string(core::dtype_name(sparse.index_dtype())));
          out.set("indices", indices_to_js(sparse.indices().data(), sparse.indices().size(),
                                           sparse.index_dtype()));
          out.set("values", dense_to_js(sparse.values()));
          val shape = val::array();
          for (std::int64_t d : sparse.dense_shape())
            shape.call<void>("push", static_cast<double>(d));
          out.set("dense_shape", shape);
        }
      },
      tensor);
  return out;
}

core::NamedTensors named_tensors_from_js(const val& object) {
  core::NamedTensors out;
  const val keys = val::global("Object").call<val>("keys", object);
  const auto n = keys["length"].as<std::size_t>();
  for (std::size_t i = 0; i < n; ++i) {
    const std::string name = keys[i].as<std::string>();
    out.emplace(name, tensor_from_js(name, object[name]));
  }
  return out;
}

val named_tensors_to_js(const core::NamedTensors& tensors) {
  val out = val::object();
  for (const auto& [name, tensor] : tensors) out.set(name, tensor_to_js(tensor));
  return out;
}

core::Metadata metadata_from_js(const val& object) {
  core::Metadata out;
  if (object.isUndefined() || object.isNull()) return out;
  const val keys = val::global("Object").call<val>("keys", object);
  const auto n = keys["length"].as<std::size_t>();
  for (std::size_t i = 0; i < n; ++i) {
    const std::string key = keys[i].as<std::string>();
    const val v = object[key];
    if (!v.isString()) throw InvalidInput("metadata '" + key + "' must be a string");
    out[key] = v.as<std::string>();
  }
  return out;
}

val metadata_to_js(const core::Metadata& metadata) {
  val out = val::object();
  for (const auto& [k, v] : metadata) out.set(k, v);
  return out;
}

}  // namespace fedleaf::wasm
