#include "core/aggregation/robust/adaptive_example_cap.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace fedleaf::core {
namespace {

constexpr std::uint64_t kMaxCap = std::uint64_t{1} << 53;

}  // namespace

void check_example_cap(std::uint64_t cap, const std::string& what) {
  if (cap < 1 || cap > kMaxCap) {
    throw InvalidInput(what + " " + std::to_string(cap) + " is not an integer in [1, 2^53]");
  }
}

std::uint64_t median_claim(std::vector<std::uint64_t> claims) {
  if (claims.empty()) return 0;
  const auto middle = claims.begin() + static_cast<std::ptrdiff_t>((claims.size() - 1) / 2);
  std::nth_element(claims.begin(), middle, claims.end());
  return *middle;
}

std::uint64_t next_example_cap(std::uint64_t cap, std::uint64_t median,
                               const AdaptiveExampleCap& rule) {
  check_example_cap(cap, "adaptive example cap: the cap");
  if (median == 0) return cap;
  // Both factors are at most 2^53 and 1e6, so the product is finite; it is exact below 2^53.
  const double next = std::floor(rule.median_multiple * static_cast<double>(median));
  return static_cast<std::uint64_t>(std::clamp(next, 1.0, static_cast<double>(kMaxCap)));
}

}  // namespace fedleaf::core
