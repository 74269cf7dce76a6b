// The body of POST .../rounds/{r}/model:select: which rows of which tensors a leaf asks for.
//
//   SelectBodyFormat f = select_body_format(content_type);   // InvalidInput for other types
//   SelectRequest r = parse_select_request(body, f);
//   r.rows.at("emb/weight") == std::vector<std::uint32_t>{3, 17, 9000};
//
// Two forms of the same request:
// - kJson, Content-Type application/json: {"tensors": {"emb/weight": [3, 17, 9000]}};
//   no other fields, ids are JSON integers in [0, 2^32).
// - kBinary, Content-Type application/vnd.fedleaf.select-ids: records
//   `u16 name_length | name (UTF-8) | u32 count | count × u32 row id`, little-endian, back to
//   back, nothing after the last record (an empty body selects nothing).
// In both, each tensor appears at most once, its name is non-empty, and its ids are sorted
// strictly ascending (no duplicates: a leaf sorts once; normalising would hide its bugs). An
// empty id list is allowed. Ranges, caps and whether a tensor may be selected at all are the
// model's and the plan's business: check_select_request() (select_rules.h).
//
// A security boundary: any byte string either parses or throws InvalidInput naming the tensor
// (where there is one) and the rule. Memory stays within 4 bytes per id in the body (the JSON
// form is parsed as a stream, never as a document).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fedleaf::core {

enum class SelectBodyFormat { kJson, kBinary };

inline constexpr std::string_view kSelectJsonContentType = "application/json";
inline constexpr std::string_view kSelectBinaryContentType = "application/vnd.fedleaf.select-ids";

struct SelectRequest {
  std::map<std::string, std::vector<std::uint32_t>> rows;  // tensor -> ascending row ids
};

// The format named by a Content-Type header value (parameters such as "; charset=utf-8" and
// the case of the media type are ignored). Throws InvalidInput for any other type.
SelectBodyFormat select_body_format(std::string_view content_type);

SelectRequest parse_select_request(std::string_view body, SelectBodyFormat format);

// The binary form of a request (what a leaf sends; tests and tools use it too).
std::string encode_select_request(const SelectRequest& request);

}  // namespace fedleaf::core
