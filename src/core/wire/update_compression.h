// The compressed encodings of a tensor's values and row ids on the wire: what a leaf's upload
// holds when the plan asks for "compression" (and a model:select answer for "download_values").
// The file stays plain safetensors; the encoding of each tensor is named in its __metadata__.
//
//   write_safetensors(update, meta, {{"emb/weight", {ValuesCompression::kInt8,
//                                                    IdsCompression::kDeltaVarint}}});
//   read_safetensors(bytes)   // decodes through decode_compressed_arrays: F32 values, I64 ids
//
// Encodings, for a tensor `x` (its values array is `x:values` for a sparse tuple, `x` itself for
// a dense tensor; its ids array is `x:indices`):
//   values "f16"   the values array is F16 (IEEE round to nearest even, half_float.h);
//                  metadata "x:values_compression" = "f16"
//   values "int8"  the values array is I8 in [-127, 127] and "x:scales" an F32 array: one scale
//                  per row for a row_sparse tuple of rank >= 2, else one per block of
//                  kInt8BlockValues values (the last block may be shorter). scale = absmax / 127
//                  of its values, q = round(v / scale) to nearest (ties away from zero, in
//                  double), decoded as the F32 nearest to q × scale; metadata
//                  "x:values_compression" = "int8". |v - decoded| <= scale / 2 (+ F32 rounding).
//   ids "u32"      sparse tuples (row_sparse or coo): the ids array is U32, 4 bytes an id, each
//                  below 2^32; no metadata key (the dtype says it). Reading widens a U32
//                  "x:indices" to I64 and checks it like any ids (ids >= dense_shape refused);
//                  a U32 array under any other name is refused.
//   ids "delta_varint"   row_sparse tuples only: the sorted row ids as unsigned LEB128 varints
//                  (7 bits a byte, low group first) of their gaps (the first id itself, then id_i
//                  - id_{i-1}), a U8 array [bytes]; metadata "x:ids_compression" = "delta_varint".
// Rounding is deterministic: no stochastic rounding (a patent family covers stochastic
// quantization combined with variable-length coding of updates); the values stay fixed length.
//
// Decoding is a security boundary like the rest of the reader: a scale that is NaN, infinite,
// negative or so large that 127 × scale overflows F32, an I8 value of -128, a scale count or an
// id count that disagrees with the values' rows, a varint that runs past its array or past 2^32,
// a gap of 0 (a duplicate id) or bytes left over all throw InvalidInput naming the tensor and
// the rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/tensor/dense_tensor.h"
#include "core/tensor/tensor.h"
#include "core/wire/safetensors_index.h"

namespace fedleaf::core {

enum class ValuesCompression { kF32, kF16, kInt8 };
// kI64: the ids as the I64 array every sparse tuple has; kU32: the same ids as a U32 array.
enum class IdsCompression { kI64, kU32, kDeltaVarint };
// Every compression, in the order a plan's schema lists them.
inline constexpr ValuesCompression kValuesCompressions[] = {
    ValuesCompression::kF32, ValuesCompression::kF16, ValuesCompression::kInt8};
inline constexpr IdsCompression kIdsCompressions[] = {IdsCompression::kI64, IdsCompression::kU32,
                                                      IdsCompression::kDeltaVarint};

struct TensorCompression {
  ValuesCompression values = ValuesCompression::kF32;
  IdsCompression ids = IdsCompression::kI64;

  bool plain() const { return values == ValuesCompression::kF32 && ids == IdsCompression::kI64; }
  friend bool operator==(const TensorCompression& a, const TensorCompression& b) {
    return a.values == b.values && a.ids == b.ids;
  }
};

// By tensor name; a tensor not named travels plain.
using CompressionByTensor = std::map<std::string, TensorCompression>;

inline constexpr std::size_t kInt8BlockValues = 256;

std::string_view values_compression_name(ValuesCompression values);  // "f32" | "f16" | "int8"
std::string_view ids_compression_name(IdsCompression ids);  // "i64" | "u32" | "delta_varint"
std::optional<ValuesCompression> parse_values_compression(std::string_view name);
std::optional<IdsCompression> parse_ids_compression(std::string_view name);

// "<tensor>:values_compression", "<tensor>:ids_compression", "<tensor>:scales".
std::string values_compression_key(const std::string& tensor);
std::string ids_compression_key(const std::string& tensor);
std::string scales_array_name(const std::string& tensor);

// Values per int8 scale: a row for the rows (rank >= 2) of a row_sparse tuple, else a block.
std::size_t int8_group_values(bool row_sparse_rows, std::size_t row_size);
std::size_t int8_scale_count(std::size_t values, std::size_t group_values);

// absmax / 127 of `n` finite values (0 when they are all zero).
float int8_scale(const float* values, std::size_t n);
// Writes round(values[i] / scale) in [-127, 127]; a zero scale writes zeros.
void quantize_int8(const float* values, std::size_t n, float scale, std::int8_t* out);
// The F32 nearest to q × scale.
float dequantize_int8(std::int8_t q, float scale);

// Bytes of `value` as an unsigned LEB128 varint (1 to 5 for a 32-bit value).
std::size_t varint_size(std::uint32_t value);
// Writes `value` at `out` (room for varint_size bytes) and returns the bytes written.
std::size_t put_varint(std::uint32_t value, std::uint8_t* out);

// The arrays of the tensors that `metadata` names as compressed, decoded: values as F32 arrays
// (of the stored shape), ids as I64 [rows], under the stored array's name. `consumed` lists
// every stored array they replace (scales included), and the compression keys are removed from
// `metadata`. `data` is the indexed file.
struct DecodedArrays {
  std::map<std::string, DenseTensor> arrays;
  std::set<std::string> consumed;
};
DecodedArrays decode_compressed_arrays(const SafetensorsIndex& index, const std::uint8_t* data,
                                       Metadata& metadata);

}  // namespace fedleaf::core
