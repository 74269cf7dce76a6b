// Tensors across the JS boundary, in the normalized form js_bindings/src/engine/tensors.js
// produces:
//   dense:  {encoding: 'dense', dtype: 'F32', shape: [2, 3], data: <TypedArray>}
//   sparse: {encoding: 'coo' | 'row_sparse', index_dtype: 'I32' | 'I64', indices: <TypedArray>,
//            values: {dtype, shape, data}, dense_shape: [..numbers]}
// Going out, `data`/`indices` are fresh Uint8Arrays of the raw little-endian bytes; the JS layer
// views them as the right TypedArray.
#pragma once

#include <string>

#include "core/tensor/tensor.h"
#include "js_interop.h"

namespace fedleaf::wasm {

core::Tensor tensor_from_js(const std::string& name, const val& spec);
val tensor_to_js(const core::Tensor& tensor);

core::NamedTensors named_tensors_from_js(const val& object);
val named_tensors_to_js(const core::NamedTensors& tensors);

core::Metadata metadata_from_js(const val& object);
val metadata_to_js(const core::Metadata& metadata);

}  // namespace fedleaf::wasm
