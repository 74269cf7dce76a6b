// How a training session reads the model it trains: the model's header index and a reader of
// its byte ranges (ModelView), and the parameters and embedding rows it takes from them. Only
// the arrays (and, for embedding tables, the rows) a session trains are ever copied; F16 and
// BF16 values are widened to F32 as they are read.
//
//   const ModelView view(index, read);
//   DenseTensor w = take_parameter(view, spec);          // a dense parameter, checked finite
//   StoredValues where;  locate_rows(view, table_spec, dataset.distinct_ids(), where);
//
// Errors are InvalidInput naming the model tensor and the rule (missing, wrong dtype or shape,
// a selection lacking a row the data touch, a value that is not finite).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/data/compact_rows.h"
#include "core/error.h"
#include "core/model/model_spec.h"
#include "core/tensor/dense_tensor.h"
#include "core/tensor/dtype.h"
#include "core/wire/safetensors_index.h"

namespace fedleaf::core {

// Copies `size` bytes of the model, starting at byte `begin`, into `out`.
using ModelByteReader =
    std::function<void(std::uint64_t begin, std::size_t size, std::uint8_t* out)>;

// Where a trained parameter's initial values are in the model: the session reads them again
// when it writes the update (value now - value read), instead of keeping a copy.
struct StoredValues {
  std::uint64_t begin = 0;  // model byte offset of stored row 0 (a dense array or selection values)
  DType dtype = DType::F32;     // as stored: F32, F16 or BF16 (widened when read)
  bool compact = false;         // local rows are the session's compact rows (an embedding table)
  bool from_selection = false;  // stored rows are a model:select answer's rows, not global rows
  // The selection row of each compact row when the selection holds rows the data do not touch;
  // empty when it holds exactly the compact rows (compact row r is selection row r).
  std::vector<std::uint32_t> positions;
};

// `count` floats of dtype `stored` (F32, F16 or BF16) at model byte `begin`, as F32 into out.
void read_floats_from(const ModelByteReader& read, DType stored, std::uint64_t begin,
                      std::size_t count, float* out);

// The model as the session reads it: the index of its header and a reader of byte ranges. Only
// the arrays (and, for embedding tables, the rows) the session trains are ever copied.
class ModelView {
 public:
  ModelView(const SafetensorsIndex& index, const ModelByteReader& read)
      : index_(index), read_(read) {}

  // The encoding of tensor `name`: "dense", the metadata's encoding of a sparse tuple, or "" when
  // the model holds neither.
  std::string encoding(const std::string& name) const {
    if (index_.arrays.count(name) != 0) return "dense";
    const auto it = index_.metadata.find(name + ":encoding");
    if (it != index_.metadata.end() && index_.arrays.count(name + ":values") != 0) {
      return it->second;
    }
    return "";
  }

  const SafetensorsArray& array(const std::string& name) const {
    const auto it = index_.arrays.find(name);
    if (it == index_.arrays.end()) throw InvalidInput("model: missing array '" + name + "'");
    return it->second;
  }

  // Bytes [begin, begin + size) of the model into out.
  void read(std::uint64_t begin, std::size_t size, void* out) const {
    if (size != 0) read_(begin, size, static_cast<std::uint8_t*>(out));
  }

  // `count` floats of dtype `stored` (F32, F16 or BF16) from byte `begin` into out, as F32.
  void read_floats(DType stored, std::uint64_t begin, std::size_t count, float* out) const {
    read_floats_from(read_, stored, begin, count, out);
  }

 private:
  const SafetensorsIndex& index_;
  const ModelByteReader& read_;
};

// Throws InvalidInput "model tensor '<name>': a value is not finite (NaN or infinity)".
void check_finite(const std::string& name, const float* values, std::size_t count);

// A dense parameter of the declared shape (stored F32, F16 or BF16), as F32, checked finite.
DenseTensor take_parameter(const ModelView& model, const ParameterSpec& p);

// Where the compact rows `rows` of an embedding table are stored, into `source`: in the whole
// table (a dense array) or in the rows the server selected (a row-sparse tuple). Every row the
// dataset touches must be in a selection; other selected rows (padding) are ignored, so training
// on a selection gives the same bytes as training on the whole table.
void locate_rows(const ModelView& model, const ParameterSpec& p, const CompactRows& rows,
                 StoredValues& source);

}  // namespace fedleaf::core
