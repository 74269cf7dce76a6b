#include "core/json/json_nesting.h"

#include "core/error.h"

namespace fedleaf::core {

void check_json_nesting(std::string_view text, std::size_t max_depth, const std::string& what) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, which may be a quote
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        throw InvalidInput(what + ": JSON nested deeper than " + std::to_string(max_depth) +
                           " levels (arrays and objects)");
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

}  // namespace fedleaf::core
