// The header of a safetensors file, parsed and validated without touching its data: where each
// stored array's bytes are. read_safetensors() decodes through it; the server keeps one per
// published model so that slicing rows out of the model costs only the bytes copied.
//
//   SafetensorsIndex index = index_safetensors(bytes.data(), bytes.size());
//   const SafetensorsArray& w = index.arrays.at("emb/weight");       // dtype, shape
//   const std::uint8_t* row7 = bytes.data() + w.begin + 7 * row_bytes(w);
//
// Arrays are the stored ones: a sparse tuple `x` appears as `x:indices`, `x:values`,
// `x:dense_shape`, and its `x:encoding` key stays in `metadata` (read_safetensors reassembles
// tuples; the index does not look at them).
//
// A security boundary like read_safetensors: any byte string either indexes or throws
// InvalidInput naming the tensor and the rule (the same rules and messages, since
// read_safetensors calls this), and every range of an index lies inside the indexed bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "core/tensor/dense_tensor.h"
#include "core/tensor/tensor.h"

namespace fedleaf::core {

inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsArray {
  DType dtype = DType::F32;
  Shape shape;
  // Byte range [begin, end) of the array's data, counted from the start of the file.
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

struct SafetensorsIndex {
  std::map<std::string, SafetensorsArray> arrays;  // by stored name
  Metadata metadata;                               // every __metadata__ entry, as stored
  std::uint64_t file_size = 0;                     // the bytes the index was made from
};

SafetensorsIndex index_safetensors(const std::uint8_t* data, std::size_t size);
// The same from the file's leading `size` bytes only (at least 8 + the header length) and the
// whole file's size: what a reader that copies out only some byte ranges (a leaf reading a
// download held by JS) indexes. Ranges are checked against file_size.
SafetensorsIndex index_safetensors(const std::uint8_t* data, std::size_t size,
                                   std::uint64_t file_size);

// Bytes of one row (one index along the first dimension) of a rank >= 1 array: the product of
// shape[1:] times the element size. Overflow cannot happen for an array that was indexed.
std::uint64_t row_bytes(const SafetensorsArray& array);

}  // namespace fedleaf::core
