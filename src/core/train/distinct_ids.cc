#include "core/train/distinct_ids.h"

#include "core/train/compact_rows.h"

namespace fedleaf::core {

std::vector<std::uint32_t> distinct_ids(const std::vector<std::uint32_t>& ids, std::size_t vocab) {
  return CompactRows(ids, vocab).rows();
}

}  // namespace fedleaf::core
