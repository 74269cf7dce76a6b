// The safetensors codec: fedleaf's file and HTTP body format for models and updates.
//
//   NamedTensors t;  t.emplace("w", DenseTensor::zeros(DType::F32, {2, 3}));
//   std::vector<std::uint8_t> bytes = write_safetensors(t, {{"task_id", "42"}});
//   SafetensorsFile f = read_safetensors(bytes.data(), bytes.size());
//
// Layout (the public format): 8-byte little-endian header length N, N bytes of JSON header
// {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"key": "value"}}, padded with spaces to a multiple of 8, then the data,
// packed with no gaps. Tensors are laid out by element size (largest first) and then by name,
// so every tensor is aligned to its element size and equal inputs give identical bytes.
//
// A sparse tuple named `x` is stored as `x:indices`, `x:values`, `x:dense_shape` (I64) with
// `x:encoding` = "coo" | "row_sparse" in the metadata; the reader reassembles it and removes the
// `x:encoding` keys from the metadata it returns.
//
// The header is parsed by index_safetensors() (safetensors_index.h) and laid out by
// layout_safetensors() (safetensors_layout.h); both are shared with the model:select answer.
//
// F16 and BF16 arrays (dtype.h) are widened to F32 tensors on read, exactly (half_float.h);
// the writer writes the dtypes tensors hold, so a file read and written again holds F32.
// Compressed tensors (F16 or int8 values, delta-varint ids, named in the metadata:
// update_compression.h) are decoded on read, and their metadata keys removed.
//
// The reader is a security boundary: any byte string either decodes or throws InvalidInput
// naming the tensor and the rule; it never reads outside the buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"
#include "core/wire/safetensors_index.h"
#include "core/wire/update_compression.h"

namespace fedleaf::core {

struct SafetensorsFile {
  NamedTensors tensors;
  Metadata metadata;
};

struct SafetensorsReadOptions {
  // Reject NaN and infinities in floating-point tensors (update uploads, models), after widening.
  bool require_finite = false;
  // Reject sparse tuples whose indices are not sorted and unique.
  bool require_canonical = false;
};

// `compression` names tensors to write compressed (update_compression.h): F32 values as F16 or
// int8 with scales, a row_sparse tuple's ids as delta varints. The reader decodes them.
std::vector<std::uint8_t> write_safetensors(const NamedTensors& tensors,
                                            const Metadata& metadata = {},
                                            const CompressionByTensor& compression = {});
// The same bytes in a std::string, written there directly: the server keeps models and
// checkpoints as strings, and a 16.8 MB model copied from a vector costs a copy and a fresh
// allocation per published round.
std::string write_safetensors_string(const NamedTensors& tensors, const Metadata& metadata = {},
                                     const CompressionByTensor& compression = {});

SafetensorsFile read_safetensors(const std::uint8_t* data, std::size_t size,
                                 const SafetensorsReadOptions& options = {});
// The same through `index`, the caller's index_safetensors() of these bytes (index.file_size of
// them at `data`): a reader that has read the header already does not parse it again.
SafetensorsFile read_safetensors(const SafetensorsIndex& index, const std::uint8_t* data,
                                 const SafetensorsReadOptions& options = {});

inline SafetensorsFile read_safetensors(const std::vector<std::uint8_t>& bytes,
                                        const SafetensorsReadOptions& options = {}) {
  return read_safetensors(bytes.data(), bytes.size(), options);
}

}  // namespace fedleaf::core
