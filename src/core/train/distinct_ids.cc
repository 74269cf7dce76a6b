#include "core/train/distinct_ids.h"

#include <string>

#include "core/error.h"

namespace fedleaf::core {
namespace {

struct PresenceBitmap {
  std::vector<std::uint64_t> present;
  std::vector<std::uint32_t> rows_before;  // ids present in the words before this one
  std::uint32_t count = 0;

  PresenceBitmap(const std::vector<std::uint32_t>& ids, std::size_t vocab)
      : present((vocab + 63) / 64, 0), rows_before(present.size()) {
    for (std::uint32_t id : ids) {
      if (id >= vocab) {
        throw InvalidInput("ids: id " + std::to_string(id) + " is not below the vocabulary of " +
                           std::to_string(vocab));
      }
      present[id / 64] |= std::uint64_t{1} << (id % 64);
    }
    for (std::size_t w = 0; w < present.size(); ++w) {
      rows_before[w] = count;
      count += static_cast<std::uint32_t>(__builtin_popcountll(present[w]));
    }
  }

  std::vector<std::uint32_t> rows() const {
    std::vector<std::uint32_t> out;
    out.reserve(count);
    for (std::size_t w = 0; w < present.size(); ++w) {
      for (std::uint64_t bits = present[w]; bits != 0; bits &= bits - 1) {
        out.push_back(static_cast<std::uint32_t>(w * 64 + __builtin_ctzll(bits)));
      }
    }
    return out;
  }

  std::uint32_t rank(std::uint32_t id) const {
    const std::uint64_t below = present[id / 64] & ((std::uint64_t{1} << (id % 64)) - 1);
    return rows_before[id / 64] + static_cast<std::uint32_t>(__builtin_popcountll(below));
  }
};

}  // namespace

std::vector<std::uint32_t> distinct_ids(const std::vector<std::uint32_t>& ids, std::size_t vocab) {
  return PresenceBitmap(ids, vocab).rows();
}

RowCompaction compact_rows(const std::vector<std::uint32_t>& ids, std::size_t vocab) {
  const PresenceBitmap bitmap(ids, vocab);
  RowCompaction out;
  out.rows = bitmap.rows();
  out.compact_ids.resize(ids.size());
  for (std::size_t j = 0; j < ids.size(); ++j) out.compact_ids[j] = bitmap.rank(ids[j]);
  return out;
}

}  // namespace fedleaf::core
