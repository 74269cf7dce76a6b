#include "core/wire/safetensors_index.h"

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json/json_duplicate_keys.h"
#include "core/json/json_nesting.h"
#include "core/text/text_format.h"

namespace fedleaf::core {
namespace {

using nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";

std::uint64_t read_le_u64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::uint64_t read_unsigned(const json& value, const std::string& what) {
  if (!value.is_number_unsigned()) {
    throw InvalidInput(what + " must be a non-negative integer");
  }
  return value.get<std::uint64_t>();
}

// One header entry; begin and end count from the start of the data section.
struct HeaderEntry {
  std::string name;
  SafetensorsArray array;
};

HeaderEntry parse_entry(const std::string& name, const json& entry) {
  const std::string where = "safetensors: tensor " + in_quotes(name);
  if (!entry.is_object()) throw InvalidInput(where + ": header entry must be a JSON object");
  for (const auto& [key, _] : entry.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      throw InvalidInput(where + ": unknown header field " + in_quotes(key));
    }
  }
  const auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    throw InvalidInput(where + ": header entry needs a string 'dtype'");
  }
  HeaderEntry out{name, {parse_dtype(dtype_it->get<std::string>(), where), {}, 0, 0}};
  SafetensorsArray& a = out.array;
  const auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) {
    throw InvalidInput(where + ": header entry needs an array 'shape'");
  }
  for (const json& d : *shape_it) {
    const std::uint64_t dim = read_unsigned(d, where + ": every shape dimension");
    if (dim > std::numeric_limits<std::size_t>::max()) {
      throw InvalidInput(where + ": shape dimension " + std::to_string(dim) + " is too large");
    }
    a.shape.push_back(static_cast<std::size_t>(dim));
  }
  const auto offsets_it = entry.find("data_offsets");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
    throw InvalidInput(where + ": header entry needs 'data_offsets' [begin, end]");
  }
  a.begin = read_unsigned((*offsets_it)[0], where + ": data_offsets begin");
  a.end = read_unsigned((*offsets_it)[1], where + ": data_offsets end");
  if (a.begin > a.end) {
    throw InvalidInput(where + ": data_offsets begin " + std::to_string(a.begin) +
                       " is after end " + std::to_string(a.end));
  }
  const std::size_t count = shape_element_count(a.shape, where);
  const std::size_t size = dtype_size(a.dtype);
  // The byte count must fit size_t (wasm32: 32 bits, where count * size wrapped: [2^30, 2] of
  // F32 "needed 0" bytes and passed with empty data_offsets); the product is exact in 64 bits.
  const bool too_large = count > std::numeric_limits<std::size_t>::max() / size;
  const std::uint64_t bytes = std::uint64_t{count} * size;
  if (too_large || bytes != a.end - a.begin) {
    throw InvalidInput(
        where + ": data_offsets [" + std::to_string(a.begin) + ", " + std::to_string(a.end) +
        "] hold " + std::to_string(a.end - a.begin) + " bytes but shape " +
        shape_to_string(a.shape) + " of " + std::string(dtype_name(a.dtype)) + " needs " +
        (too_large ? std::string("more than fit in memory") : std::to_string(bytes)));
  }
  return out;
}

// The arrays must tile the data section exactly: in offset order, no overlap, gap or tail.
void check_layout(std::vector<HeaderEntry>& entries, std::uint64_t data_size) {
  std::sort(entries.begin(), entries.end(), [](const HeaderEntry& a, const HeaderEntry& b) {
    return std::tie(a.array.begin, a.array.end, a.name) <
           std::tie(b.array.begin, b.array.end, b.name);
  });
  std::uint64_t cursor = 0;
  for (const HeaderEntry& e : entries) {
    const std::string where = "safetensors: tensor " + in_quotes(e.name);
    if (e.array.end > data_size) {
      throw InvalidInput(where + ": data_offsets end " + std::to_string(e.array.end) +
                         " is out of bounds of the " + std::to_string(data_size) +
                         "-byte data section");
    }
    if (e.array.begin < cursor) {
      throw InvalidInput(where + ": data_offsets [" + std::to_string(e.array.begin) + ", " +
                         std::to_string(e.array.end) + "] overlap the previous tensor");
    }
    if (e.array.begin > cursor) {
      throw InvalidInput(where + ": data_offsets begin " + std::to_string(e.array.begin) +
                         " leaves a gap after byte " + std::to_string(cursor));
    }
    cursor = e.array.end;
  }
  if (cursor != data_size) {
    throw InvalidInput("safetensors: tensors cover " + std::to_string(cursor) + " of the " +
                       std::to_string(data_size) + " data bytes (trailing bytes)");
  }
}

}  // namespace

SafetensorsIndex index_safetensors(const std::uint8_t* data, std::size_t size) {
  return index_safetensors(data, size, size);
}

SafetensorsIndex index_safetensors(const std::uint8_t* data, std::size_t size,
                                   std::uint64_t file_size) {
  if (file_size < size) {
    throw InvalidInput("safetensors: " + std::to_string(size) + " leading bytes of a " +
                       std::to_string(file_size) + "-byte file");
  }
  if (size < 8) {
    throw InvalidInput("safetensors: truncated input: " + std::to_string(size) +
                       " bytes, fewer than the 8-byte header length");
  }
  const std::uint64_t header_size = read_le_u64(data);
  if (header_size > kMaxSafetensorsHeaderBytes) {
    throw InvalidInput("safetensors: header length " + std::to_string(header_size) +
                       " exceeds the limit of " + std::to_string(kMaxSafetensorsHeaderBytes) +
                       " bytes");
  }
  if (header_size > size - 8) {
    throw InvalidInput("safetensors: header length " + std::to_string(header_size) +
                       " exceeds the " + std::to_string(size - 8) + " bytes after it (truncated)");
  }
  const char* header_begin = reinterpret_cast<const char*>(data + 8);
  // As the reference implementation: the header is a JSON object from its first byte (no
  // leading whitespace), and a key given twice (a tensor name, a field of one) is an error, not
  // "the last one wins".
  if (header_size == 0 || header_begin[0] != '{') {
    throw InvalidInput("safetensors: the header must start with '{' (a JSON object)");
  }
  check_json_nesting({header_begin, static_cast<std::size_t>(header_size)}, kMaxJsonNesting,
                     "safetensors: header");
  DuplicateKeys duplicates;
  const json header =
      json::parse(header_begin, header_begin + header_size, duplicates.callback(), false);
  if (header.is_discarded() || !header.is_object()) {
    throw InvalidInput("safetensors: header is not a valid JSON object");
  }
  if (duplicates.found()) {
    throw InvalidInput("safetensors: the header names " + duplicates.describe() + " twice");
  }
  SafetensorsIndex index;
  index.file_size = file_size;
  std::vector<HeaderEntry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      if (!value.is_object()) throw InvalidInput("safetensors: __metadata__ must be a JSON object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) {
          throw InvalidInput("safetensors: __metadata__ value of " + in_quotes(mk) +
                             " must be a string");
        }
        index.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(key, value));
  }
  const std::uint64_t data_offset = 8 + header_size;
  check_layout(entries, file_size - data_offset);
  for (HeaderEntry& e : entries) {
    e.array.begin += data_offset;
    e.array.end += data_offset;
    index.arrays.emplace(std::move(e.name), std::move(e.array));
  }
  return index;
}

std::uint64_t row_bytes(const SafetensorsArray& array) {
  std::uint64_t bytes = dtype_size(array.dtype);
  for (std::size_t d = 1; d < array.shape.size(); ++d) bytes *= array.shape[d];
  return bytes;
}

}  // namespace fedleaf::core
