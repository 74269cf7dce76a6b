// JS API of the foundation: version, the safetensors codec, coalesce.
#include <emscripten/bind.h>

#include "core/tensor/coalesce.h"
#include "core/version.h"
#include "core/wire/safetensors.h"
#include "tensor_js.h"

namespace fedleaf::wasm {
namespace {

val version() { return val(std::string(kVersion)); }

// tensors: {name: normalized tensor spec}; metadata: {key: string}. Returns a Uint8Array.
val encode_safetensors(val tensors, val metadata) {
  return call_from_js([&] {
    return bytes_to_js(
        core::write_safetensors(named_tensors_from_js(tensors), metadata_from_js(metadata)));
  });
}

// bytes: any TypedArray. Returns {tensors, metadata}.
val decode_safetensors(val bytes) {
  return call_from_js([&] {
    const std::vector<std::uint8_t> in = bytes_from_js(bytes);
    core::SafetensorsFile file = core::read_safetensors(in);
    val out = val::object();
    out.set("tensors", named_tensors_to_js(file.tensors));
    out.set("metadata", metadata_to_js(file.metadata));
    return out;
  });
}

// tensor: a normalized coo or row_sparse spec. Returns its canonical form.
val coalesce(val tensor) {
  return call_from_js([&] {
    const core::Tensor t = tensor_from_js("coalesce input", tensor);
    if (const auto* coo = std::get_if<core::SparseTensor>(&t)) {
      return tensor_to_js(core::coalesce(*coo));
    }
    if (const auto* rows = std::get_if<core::RowSparseTensor>(&t)) {
      return tensor_to_js(core::coalesce(*rows));
    }
    throw InvalidInput("coalesce: expected a coo or row_sparse tensor, got a dense one");
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(fedleaf_safetensors) {
  emscripten::function("version", &version);
  emscripten::function("encodeSafetensors", &encode_safetensors);
  emscripten::function("decodeSafetensors", &decode_safetensors);
  emscripten::function("coalesce", &coalesce);
}

}  // namespace fedleaf::wasm
