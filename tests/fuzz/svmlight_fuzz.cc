// Any text either parses as svmlight or raises fedleaf::InvalidInput; what parses is a valid
// CSR dataset (offsets from 0 to nnz, non-decreasing; ids below num_features; compact ids below
// the number of distinct ids; finite weights).
// The first byte picks the options.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/data/svmlight.h"
#include "core/error.h"

namespace {

void check(const fedleaf::core::Dataset& d) {
  const auto& offsets = d.offsets();
  if (offsets.size() != d.size() + 1 || offsets.front() != 0 || offsets.back() != d.num_nonzeros())
    std::abort();
  for (std::size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] < offsets[i - 1]) std::abort();
  }
  for (std::uint32_t id : d.global_ids()) {
    if (id >= d.num_features()) std::abort();
  }
  for (std::uint32_t compact : d.compact_ids()) {
    if (compact >= d.distinct_ids().size()) std::abort();
  }
  for (float w : d.weights()) {
    if (!std::isfinite(w)) std::abort();
  }
  for (std::int32_t label : d.labels()) {
    if (label < 0) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  fedleaf::core::SvmlightOptions options;
  options.index_base = data[0] & 1;
  options.num_features = (data[0] & 2) ? 1u + (data[0] >> 2) : 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    check(fedleaf::core::parse_svmlight(text, options));
  } catch (const fedleaf::InvalidInput&) {
  }
  return 0;
}
