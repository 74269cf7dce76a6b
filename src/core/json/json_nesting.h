// A bound on how deeply JSON from outside may nest, checked on the text before it is parsed.
//
//   check_json_nesting(body, kMaxJsonNesting, "plan");   // InvalidInput "plan: JSON nested ..."
//   json plan = json::parse(body);
//
// nlohmann::json parses any depth without recursion, but printing, copying and comparing a value
// recurse once per level: a plan of [[[...]]] 100,000 deep, stored and printed, overflowed the
// server's stack. Every JSON document fedleaf reads (plans, population specs, safetensors
// headers) nests a few levels; kMaxJsonNesting leaves room for any of them. The check reads the
// text once, allocates nothing, and ignores brackets inside strings; it does not validate the
// rest of the syntax (the parser after it does).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fedleaf::core {

inline constexpr std::size_t kMaxJsonNesting = 64;

// Throws InvalidInput "<what>: JSON nested deeper than <max_depth> levels (arrays and objects)"
// when an array or object opens at depth max_depth + 1.
void check_json_nesting(std::string_view text, std::size_t max_depth, const std::string& what);

}  // namespace fedleaf::core
