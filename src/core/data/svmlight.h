// Reads svmlight / libsvm text into a sparse Dataset.
//
//   Dataset d = parse_svmlight("1 3:0.5 10:1\n-1 2:2  # comment\n", {/*index_base=*/1});
//   // example 0: label 1, ids {2, 9}, weights {0.5, 1}; example 1: label 0, id {1}, weight {2}
//
// Format, one example per line: `label [qid:N] index:value ...` with an optional `# comment`.
// Fields are separated by spaces or tabs; blank and comment-only lines are skipped; "\r\n" line
// ends are accepted. The label must be an integer (written as "1", "+1", "-1" or "2.0"); -1 is
// read as class 0, the svmlight convention for the negative class of binary tasks; any other
// negative label is an error. Indices are integers >= index_base (1 for libsvm files, 0 for
// 0-based ones); an id is index - index_base. Values are decimal floats and must be finite.
// Errors are InvalidInput naming the line number (1-based) and the offending field.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/data/dataset.h"

namespace fedleaf::core {

struct SvmlightOptions {
  int index_base = 1;  // 0 or 1
  // Bound on the ids (every id < num_features); 0 means max id + 1.
  std::uint32_t num_features = 0;
};

Dataset parse_svmlight(std::string_view text, const SvmlightOptions& options = {});

}  // namespace fedleaf::core
