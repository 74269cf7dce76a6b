#include "core/model/model_view.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/tensor/half_float.h"

namespace fedleaf::core {

void read_floats_from(const ModelByteReader& read, DType stored, std::uint64_t begin,
                      std::size_t count, float* out) {
  if (count == 0) return;
  if (stored == DType::F32) {
    read(begin, count * 4, reinterpret_cast<std::uint8_t*>(out));
    return;
  }
  std::vector<std::uint8_t> halves(count * 2);
  read(begin, halves.size(), halves.data());
  widen_to_f32(stored, halves.data(), count, out);
}

namespace {

void check_missing_or_sparse(const ModelView& model, const ParameterSpec& p) {
  const std::string encoding = model.encoding(p.name);
  if (encoding.empty()) {
    throw InvalidInput("model: missing tensor '" + p.name + "' declared by " + p.declared_by);
  }
  if (encoding != "dense") {
    throw InvalidInput("model tensor '" + p.name + "': expected a dense tensor, got " + encoding);
  }
}

// Parameters are F32; a model may store them as F16 or BF16, widened when read.
bool is_parameter_dtype(DType dtype) { return dtype == DType::F32 || is_half_float(dtype); }

// A dense F32 (or F16, BF16) array of the declared shape.
const SafetensorsArray& dense_array(const ModelView& model, const ParameterSpec& p) {
  check_missing_or_sparse(model, p);
  const SafetensorsArray& a = model.array(p.name);
  if (!is_parameter_dtype(a.dtype)) {
    throw InvalidInput("model tensor '" + p.name + "': dtype " + std::string(dtype_name(a.dtype)) +
                       ", expected F32 (or F16, BF16)");
  }
  if (a.shape != p.shape) {
    throw InvalidInput("model tensor '" + p.name + "': shape " + shape_to_string(a.shape) +
                       " differs from " + shape_to_string(p.shape) + " declared by " +
                       p.declared_by);
  }
  return a;
}

// Row ids of a selection (T:indices, I64 or I32), checked sorted, unique and below `vocab`.
std::vector<std::int64_t> selected_rows(const ModelView& model, const ParameterSpec& p) {
  const SafetensorsArray& a = model.array(p.name + ":indices");
  if ((a.dtype != DType::I64 && a.dtype != DType::I32) || a.shape.size() != 1) {
    throw InvalidInput("model tensor '" + p.name + "': indices must be I64 or I32 of rank 1");
  }
  std::vector<std::int64_t> rows(a.shape[0]);
  if (a.dtype == DType::I64) {
    model.read(a.begin, rows.size() * 8, rows.data());
  } else {
    std::vector<std::int32_t> narrow(rows.size());
    model.read(a.begin, narrow.size() * 4, narrow.data());
    std::copy(narrow.begin(), narrow.end(), rows.begin());
  }
  for (std::size_t k = 0; k < rows.size(); ++k) {
    if (rows[k] < 0 || rows[k] >= static_cast<std::int64_t>(p.shape[0])) {
      throw InvalidInput("model tensor '" + p.name + "': selected row " + std::to_string(rows[k]) +
                         " is outside [0, " + std::to_string(p.shape[0]) + ")");
    }
    if (k > 0 && rows[k] <= rows[k - 1]) {
      throw InvalidInput("model tensor '" + p.name + "': selected rows are not sorted and unique");
    }
  }
  return rows;
}

}  // namespace

// Branch-free over the whole array, which a compiler vectorizes: a float is NaN or infinite when
// its exponent bits are all set. (A test and branch per value was a tenth of a session's setup.)
void check_finite(const std::string& name, const float* values, std::size_t count) {
  std::uint32_t non_finite = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, values + i, sizeof bits);
    non_finite |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  if (non_finite != 0) {
    throw InvalidInput("model tensor '" + name + "': a value is not finite (NaN or infinity)");
  }
}

DenseTensor take_parameter(const ModelView& model, const ParameterSpec& p) {
  const SafetensorsArray& a = dense_array(model, p);
  DenseTensor value = DenseTensor::zeros(DType::F32, p.shape);
  model.read_floats(a.dtype, a.begin, value.size(), value.data<float>());
  check_finite(p.name, value.data<float>(), value.size());
  return value;
}

void locate_rows(const ModelView& model, const ParameterSpec& p, const CompactRows& rows,
                 StoredValues& source) {
  const std::size_t dim = p.shape[1];
  if (model.encoding(p.name) != "row_sparse") {
    const SafetensorsArray& table = dense_array(model, p);
    source.begin = table.begin;
    source.dtype = table.dtype;
    source.compact = true;
    return;
  }
  const SafetensorsArray& values = model.array(p.name + ":values");
  const SafetensorsArray& dense_shape = model.array(p.name + ":dense_shape");
  std::int64_t shape[2] = {0, 0};
  if (dense_shape.dtype != DType::I64 || dense_shape.shape != Shape{2}) {
    throw InvalidInput("model tensor '" + p.name + "': dense_shape must be I64 [2], declared " +
                       shape_to_string(p.shape) + " by " + p.declared_by);
  }
  model.read(dense_shape.begin, sizeof shape, shape);
  if (shape[0] != static_cast<std::int64_t>(p.shape[0]) ||
      shape[1] != static_cast<std::int64_t>(dim)) {
    throw InvalidInput("model tensor '" + p.name + "': dense_shape " +
                       shape_to_string(std::vector<std::int64_t>{shape[0], shape[1]}) +
                       " differs from " + shape_to_string(p.shape) + " declared by " +
                       p.declared_by);
  }
  const std::vector<std::int64_t> selected = selected_rows(model, p);
  if (!is_parameter_dtype(values.dtype) || values.shape != Shape{selected.size(), dim}) {
    throw InvalidInput("model tensor '" + p.name + "': values must be F32 (or F16, BF16) " +
                       shape_to_string(Shape{selected.size(), dim}));
  }
  source.begin = values.begin;
  source.dtype = values.dtype;
  source.compact = true;
  source.from_selection = true;
  std::vector<std::uint32_t> positions(rows.size());  // compact row → row of the selection
  std::size_t k = 0;
  rows.for_each_row(0, rows.size(), [&](std::size_t r, std::uint32_t global) {
    const std::int64_t row = global;
    while (k < selected.size() && selected[k] < row) ++k;
    if (k == selected.size() || selected[k] != row) {
      throw InvalidInput("model tensor '" + p.name + "': the data touch row " +
                         std::to_string(row) + ", which the selected rows do not hold");
    }
    positions[r] = static_cast<std::uint32_t>(k);
  });
  // Every compact row found in a selection of as many rows: the selection is the compact rows.
  if (selected.size() != rows.size()) source.positions = std::move(positions);
}

}  // namespace fedleaf::core
