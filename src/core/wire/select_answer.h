// The answer to model:select: the model with the requested rows of each selected tensor and
// every other tensor whole, written straight from the model's bytes (never decoded).
//
//   SafetensorsIndex index = index_safetensors(model.data(), model.size());   // once per model
//   check_select_request(request, index, rules);
//   std::vector<std::uint8_t> answer = write_select_answer(
//       model.data(), model.size(), index, request, {{"model_etag", etag}, {"round", "3"}});
//   read_safetensors(answer).tensors.at("emb/weight")   // a RowSparseTensor of those rows
//
// Each selected tensor T (a dense array [rows, ...] in the model) becomes the row-sparse tuple
// T:indices (I64 [n], the global row ids), T:values ([n, ...], the model's dtype), T:dense_shape
// (I64, the model's shape) with metadata T:encoding = row_sparse — exactly how write_safetensors
// stores a RowSparseTensor, and in its canonical layout. Every other array and every metadata
// entry of the model is copied unchanged; `extra_metadata` is added (it wins over the model's).
// A tensor named in `f16_values` whose model array is F32 is sent as F16 (IEEE round to nearest
// even; a value beyond F16's range saturates to ±65504), with metadata
// "<T>:values_compression" = "f16" (wire/update_compression.h): the plan's "download_values".
// Its T:indices are then I32 (4 bytes a row instead of 8) when T has at most 2^31 rows, so that
// every id fits; readers have always taken I32 ids, so older leaves read the answer unchanged.
// Cost: O(header + bytes of the answer); row r of T is the byte range
// [begin + r × row_bytes, begin + (r + 1) × row_bytes) of the model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"
#include "core/wire/safetensors_index.h"
#include "core/wire/select_request.h"

namespace fedleaf::core {

// `index` must be index_safetensors() of exactly these `size` bytes (fedleaf::Error otherwise).
// Throws InvalidInput when a requested tensor is not a dense array of rank >= 1 of the model or
// an id is out of its range — check_select_request() reports those with the plan's rules first;
// this never reads outside the model's bytes whatever the request.
std::vector<std::uint8_t> write_select_answer(const std::uint8_t* model, std::size_t size,
                                              const SafetensorsIndex& index,
                                              const SelectRequest& request,
                                              const Metadata& extra_metadata,
                                              const std::set<std::string>& f16_values = {});

}  // namespace fedleaf::core
