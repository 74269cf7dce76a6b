// Every rule of the safetensors decoder, one case each: the error is InvalidInput and names the
// tensor (where there is one) and the rule. Header rules are checked once, by index_safetensors,
// so each header case asserts the same error from both read_safetensors and index_safetensors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/wire/safetensors.h"
#include "core/wire/safetensors_index.h"
#include "tests/core/error_matchers.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

std::vector<std::uint8_t> raw(const std::string& header, std::size_t data_bytes,
                              std::uint64_t claimed_header = 0) {
  std::vector<std::uint8_t> out(8);
  const std::uint64_t n = claimed_header ? claimed_header : header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<std::uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes, 0);
  return out;
}

void require_rejected(const std::vector<std::uint8_t>& bytes, const std::string& fragment,
                      const SafetensorsReadOptions& options = {}) {
  CHECK_THROWS_MATCHES(read_safetensors(bytes, options), fedleaf::InvalidInput,
                       MessageContains(fragment));
}

// A header rule: the full decoder and the index reject the bytes alike.
void require_header_rejected(const std::vector<std::uint8_t>& bytes, const std::string& fragment) {
  require_rejected(bytes, fragment);
  CHECK_THROWS_MATCHES(index_safetensors(bytes.data(), bytes.size()), fedleaf::InvalidInput,
                       MessageContains(fragment));
}

}  // namespace

TEST_CASE("decode_rejects_input_shorter_than_the_length_prefix", "[safetensors][reject]") {
  require_header_rejected({1, 2, 3}, "truncated input: 3 bytes");
  require_header_rejected({}, "truncated input: 0 bytes");
}

TEST_CASE("decode_rejects_header_length_beyond_the_buffer", "[safetensors][reject]") {
  require_header_rejected(raw("{}", 0, 50), "header length 50 exceeds the 2 bytes after it");
}

TEST_CASE("decode_rejects_headers_over_100_mb", "[safetensors][reject]") {
  require_header_rejected(raw("{}", 0, 100'000'001), "exceeds the limit of 100000000 bytes");
}

TEST_CASE("decode_rejects_invalid_json", "[safetensors][reject]") {
  require_header_rejected(raw("{\"w\": {", 0), "header is not a valid JSON object");
  require_header_rejected(raw("{\"\xff\": 1}", 0), "header is not a valid JSON object");
}

TEST_CASE("decode_rejects_a_header_nested_past_the_json_limit", "[safetensors][reject]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  require_header_rejected(raw(R"({"__metadata__": {"a": )" + deep + "}}", 0),
                          "safetensors: header: JSON nested deeper than 64 levels");
}

TEST_CASE("decode_rejects_a_header_that_does_not_start_with_a_brace", "[safetensors][reject]") {
  require_header_rejected(raw("[1, 2]  ", 0), "the header must start with '{'");
  require_header_rejected(raw(" {}", 0), "the header must start with '{'");
  require_header_rejected(raw("", 0), "the header must start with '{'");
}

TEST_CASE("decode_rejects_a_tensor_named_twice", "[safetensors][reject]") {
  const std::string w = R"("w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]})";
  require_header_rejected(raw("{" + w + ", " + w + "}", 4), "the header names 'w' twice");
  require_header_rejected(raw(R"({"__metadata__": {}, "__metadata__": {}})", 0),
                          "the header names '__metadata__' twice");
  // A field of one tensor, or a metadata key, given twice: the last one won.
  require_header_rejected(
      raw(R"({"w": {"dtype": "I32", "dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 4),
      "the header names 'dtype' (in 'w') twice");
  require_header_rejected(raw(R"({"__metadata__": {"kind": "train", "kind": "evaluate"}})", 0),
                          "the header names 'kind' (in '__metadata__') twice");
}

TEST_CASE("decode_rejects_unknown_dtype", "[safetensors][reject]") {
  require_header_rejected(raw(R"({"w":{"dtype":"F8_E5M2","shape":[1],"data_offsets":[0,1]}})", 1),
                          "tensor 'w': unknown dtype 'F8_E5M2'");
}

TEST_CASE("decode_rejects_malformed_entries", "[safetensors][reject]") {
  require_header_rejected(raw(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
                          "tensor 'w': every shape dimension must be a non-negative integer");
  require_header_rejected(raw(R"({"w":{"dtype":"F32","shape":[1]}})", 4),
                          "tensor 'w': header entry needs 'data_offsets'");
  require_header_rejected(raw(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4),
                          "tensor 'w': unknown header field 'x'");
  require_header_rejected(raw(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4),
                          "tensor 'w': data_offsets begin 4 is after end 0");
  require_header_rejected(raw(R"({"w":3})", 0), "tensor 'w': header entry must be a JSON object");
  require_header_rejected(raw(R"({"__metadata__":{"a":1}})", 0),
                          "__metadata__ value of 'a' must be a string");
}

TEST_CASE("decode_rejects_offsets_out_of_bounds", "[safetensors][reject]") {
  require_header_rejected(
      raw(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
      "tensor 'w': data_offsets end 8 is out of bounds of the 4-byte data section");
}

TEST_CASE("decode_rejects_overlapping_offsets", "[safetensors][reject]") {
  require_header_rejected(raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                              8),
                          "tensor 'b': data_offsets [4, 8] overlap the previous tensor");
}

TEST_CASE("decode_rejects_offsets_not_covering_the_buffer", "[safetensors][reject]") {
  require_header_rejected(raw(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
                          "tensor 'a': data_offsets begin 4 leaves a gap after byte 0");
  require_header_rejected(raw(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 6),
                          "tensors cover 4 of the 6 data bytes");
}

// Regression: in wasm32 the byte count wrapped (2^31 F32 elements "needed 0" bytes), so this
// header passed and training read rows from memory outside the model.
TEST_CASE("decode_rejects_a_byte_count_that_overflows_32_bits", "[safetensors][reject]") {
  require_header_rejected(
      raw(R"({"w":{"dtype":"F32","shape":[1073741824,2],"data_offsets":[0,0]}})", 0),
      "tensor 'w': data_offsets [0, 0] hold 0 bytes but shape [1073741824, 2] of F32 needs ");
}

TEST_CASE("decode_rejects_byte_count_not_matching_shape", "[safetensors][reject]") {
  require_header_rejected(
      raw(R"({"w":{"dtype":"F64","shape":[2,2],"data_offsets":[0,16]}})", 16),
      "tensor 'w': data_offsets [0, 16] hold 16 bytes but shape [2, 2] of F64 needs 32");
  require_header_rejected(
      raw(R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
      "tensor 'w'");
}

namespace {

const char* kCooHeader =
    R"({"__metadata__":{"g:encoding":"%ENC%"},)"
    R"("g:indices":{"dtype":"I64","shape":[%ISHAPE%],"data_offsets":[0,16]},)"
    R"("g:dense_shape":{"dtype":"I64","shape":[1],"data_offsets":[16,24]},)"
    R"("g:values":{"dtype":"F32","shape":[%VSHAPE%],"data_offsets":[24,%VEND%]}})";

std::vector<std::uint8_t> sparse_bytes(const std::string& enc, const std::string& ishape,
                                       const std::string& vshape, std::size_t nvalues,
                                       std::int64_t i0, std::int64_t i1, std::int64_t dim,
                                       float v0 = 1.f) {
  std::string h = kCooHeader;
  auto sub = [&](const std::string& key, const std::string& val) {
    h.replace(h.find(key), key.size(), val);
  };
  sub("%ENC%", enc);
  sub("%ISHAPE%", ishape);
  sub("%VSHAPE%", vshape);
  sub("%VEND%", std::to_string(24 + 4 * nvalues));
  std::vector<std::uint8_t> b = raw(h, 24 + 4 * nvalues);
  std::uint8_t* data = b.data() + 8 + h.size();
  std::memcpy(data, &i0, 8);
  std::memcpy(data + 8, &i1, 8);
  std::memcpy(data + 16, &dim, 8);
  std::memcpy(data + 24, &v0, 4);
  return b;
}

}  // namespace

TEST_CASE("decode_accepts_a_hand_written_sparse_tuple", "[safetensors][reject]") {
  SafetensorsFile f = read_safetensors(sparse_bytes("coo", "2,1", "2", 2, 3, 1, 10));
  CHECK(std::get<SparseTensor>(f.tensors.at("g")).nnz() == 2);
}

TEST_CASE("decode_rejects_indices_values_length_mismatch", "[safetensors][reject]") {
  require_rejected(sparse_bytes("coo", "2,1", "3", 3, 3, 1, 10),
                   "sparse tensor 'g': values must have shape [2]");
  require_rejected(sparse_bytes("row_sparse", "2", "3", 3, 3, 1, 10),
                   "sparse tensor 'g': values must have shape [2]");
}

TEST_CASE("decode_rejects_out_of_range_indices", "[safetensors][reject]") {
  require_rejected(sparse_bytes("coo", "2,1", "2", 2, 3, 10, 10),
                   "sparse tensor 'g': index 10 at entry 1, dimension 0 is out of range");
  require_rejected(sparse_bytes("coo", "2,1", "2", 2, -1, 1, 10), "index -1 at entry 0");
  require_rejected(sparse_bytes("row_sparse", "2", "2", 2, 3, 10, 10),
                   "sparse tensor 'g': row index 10 at entry 1 is out of range");
}

TEST_CASE("decode_rejects_unknown_encoding_and_missing_components", "[safetensors][reject]") {
  require_rejected(sparse_bytes("csr", "2,1", "2", 2, 3, 1, 10),
                   "sparse tensor 'g': unknown encoding 'csr'");
  require_rejected(raw(R"({"__metadata__":{"h:encoding":"coo"}})", 0),
                   "sparse tensor 'h' is missing component 'h:indices'");
}

TEST_CASE("decode_rejects_non_finite_values_when_asked", "[safetensors][reject]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto bytes = sparse_bytes("coo", "2,1", "2", 2, 3, 1, 10, nan);
  CHECK_NOTHROW(read_safetensors(bytes));
  SafetensorsReadOptions strict;
  strict.require_finite = true;
  require_rejected(bytes, "tensor 'g:values': element 0 is not finite", strict);
}

TEST_CASE("decode_rejects_unsorted_indices_when_canonical_required", "[safetensors][reject]") {
  const auto bytes = sparse_bytes("coo", "2,1", "2", 2, 3, 1, 10);
  SafetensorsReadOptions strict;
  strict.require_canonical = true;
  require_rejected(bytes, "sparse tensor 'g': indices are not sorted and unique", strict);
  CHECK_NOTHROW(read_safetensors(sparse_bytes("coo", "2,1", "2", 2, 1, 3, 10), strict));
}
