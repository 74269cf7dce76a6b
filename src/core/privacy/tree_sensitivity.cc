#include "core/privacy/tree_sensitivity.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>

#include "core/error.h"

namespace fedleaf::core {
namespace {

// Below every feasible value (those are >= 0) even after adding one to another.
constexpr std::int32_t kInfeasible = -(1 << 30);
constexpr std::int64_t kMaxSetting = std::numeric_limits<std::int32_t>::max();
// Tables above this many integers (4 bytes each, 256 MB) are refused: a browser tab's wasm
// memory is 4 GB at most.
constexpr double kMaxTableEntries = 1 << 26;
// Feasible values stay below this, so that two add up without overflow and stay above
// kInfeasible's sums.
constexpr double kMaxValue = 1 << 30;

int floor_log2(std::int64_t n) {
  int j = 0;
  while ((std::int64_t{2} << j) <= n) ++j;
  return j;
}

std::string scientific(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1e", x);
  return text;
}

void check_range(std::int64_t value, std::int64_t min, const char* field) {
  if (value < min || value > kMaxSetting) {
    throw InvalidInput(std::string(field) + ": must be an integer in [" + std::to_string(min) +
                       ", " + std::to_string(kMaxSetting) + "], got " + std::to_string(value));
  }
}

}  // namespace

TreeSensitivity::TreeSensitivity(std::int64_t max_rounds, std::int64_t max_participations,
                                 std::int64_t min_separation, const PrivacyFieldNames& names)
    : rounds_name_(names.rounds) {
  check_range(max_rounds, 1, names.rounds);
  check_range(max_participations, 1, names.max_participations);
  check_range(min_separation, 0, names.min_separation);
  max_rounds_ = max_rounds;
  max_participations_ = max_participations;
  separation_ = std::min(min_separation, max_rounds - 1);
  width_ = separation_ + 1;

  const int top = floor_log2(max_rounds_);
  const auto w = static_cast<double>(width_);
  const auto k_top = static_cast<double>(max_k_for(max_rounds_));
  // A query folds up to top + 1 trees (squared()); building folds every level's two halves.
  double work = (top + 1) * (k_top + 1) * (k_top + 1) * w * w;
  double entries = 0;
  for (int j = 0; j <= top; ++j) {
    const auto k = static_cast<double>(max_k_for(std::int64_t{1} << j));
    if (k >= 2) {
      work += (k + 1) * (k + 2) / 2 * w * w * w;
      entries += (k + 1) * w * w;
    }
  }
  if (k_top * k_top * (top + 1) >= kMaxValue) {
    throw InvalidInput(std::string(names.max_participations) + ": " +
                       std::to_string(max_k_for(max_rounds_)) + " participations in " +
                       std::to_string(max_rounds_) +
                       " rounds exceed the exact tree accounting's range (participations^2 x "
                       "(log2(rounds) + 1) must stay below 2^30)");
  }
  if (work > kMaxWork || entries > kMaxTableEntries) {
    throw InvalidInput(std::string(names.min_separation) + " and " + names.max_participations +
                       ": the exact tree accounting for " + std::to_string(max_rounds_) +
                       " rounds would take " + scientific(work) + " steps and " +
                       scientific(entries) +
                       " table entries; at most 1e+10 and 6.7e+07 are allowed (fewer rounds, a "
                       "smaller min_separation or fewer participations fit)");
  }
  levels_.reserve(static_cast<std::size_t>(top) + 1);
  for (int j = 0; j <= top; ++j) {
    levels_.push_back(complete_tree(j, j == 0 ? nullptr : &levels_.back()));
  }
}

std::int64_t TreeSensitivity::max_k_for(std::int64_t leaves) const {
  // k participations need k - 1 gaps of width_ - 1 leaves: (k - 1) * width_ + 1 <= leaves.
  return std::min(max_participations_, (leaves + separation_) / width_);
}

std::int64_t TreeSensitivity::participations_possible(std::int64_t rounds) const {
  if (rounds < 1 || rounds > max_rounds_) {
    throw InvalidInput(std::string(rounds_name_) + ": must be in [1, " +
                       std::to_string(max_rounds_) + "], got " + std::to_string(rounds));
  }
  return max_k_for(rounds);
}

std::int32_t& TreeSensitivity::at(Table& t, std::int64_t k, std::int64_t s, std::int64_t e) const {
  return t.values[static_cast<std::size_t>((k * width_ + s) * width_ + e)];
}

std::int32_t TreeSensitivity::at(const Table& t, std::int64_t k, std::int64_t s,
                                 std::int64_t e) const {
  if (t.values.empty()) {
    // A tree too small for two participations: every leaf is under level + 1 nodes.
    const std::int64_t leaves = std::int64_t{1} << t.level;
    if (k == 0) return s <= leaves + e ? 0 : kInfeasible;
    return s + width_ <= leaves + e ? t.level + 1 : kInfeasible;
  }
  return t.values[static_cast<std::size_t>((k * width_ + s) * width_ + e)];
}

TreeSensitivity::Table TreeSensitivity::complete_tree(int level, const Table* child) const {
  Table out;
  out.level = level;
  out.max_k = max_k_for(std::int64_t{1} << level);
  if (out.max_k <= 1) return out;  // closed form, see at()

  // The child as a full table (the first level computed here has a closed-form child).
  Table materialized;
  if (child->values.empty()) {
    materialized.level = child->level;
    materialized.max_k = child->max_k;
    materialized.values.resize(static_cast<std::size_t>((child->max_k + 1) * width_ * width_));
    for (std::int64_t k = 0; k <= child->max_k; ++k) {
      for (std::int64_t s = 0; s < width_; ++s) {
        for (std::int64_t e = 0; e < width_; ++e) at(materialized, k, s, e) = at(*child, k, s, e);
      }
    }
    child = &materialized;
  }

  const auto w = static_cast<std::size_t>(width_);
  out.values.assign(static_cast<std::size_t>(out.max_k + 1) * w * w, kInfeasible);
  for (std::int64_t k = 0; k <= out.max_k; ++k) {
    std::int32_t* result = &out.values[static_cast<std::size_t>(k) * w * w];
    for (std::int64_t a = std::max<std::int64_t>(0, k - child->max_k);
         a <= std::min(k, child->max_k); ++a) {
      const std::int32_t* left = &child->values[static_cast<std::size_t>(a) * w * w];
      const std::int32_t* right = &child->values[static_cast<std::size_t>(k - a) * w * w];
      // Max-plus product over r, the leaves of the right half blocked by the left half's last
      // participation: result[s][e] = max_r left[s][r] + right[r][e].
      for (std::size_t s = 0; s < w; ++s) {
        std::int32_t* row = result + s * w;
        for (std::size_t r = 0; r < w; ++r) {
          const std::int32_t l = left[s * w + r];
          if (l < 0) continue;
          const std::int32_t* right_row = right + r * w;
          for (std::size_t e = 0; e < w; ++e) row[e] = std::max(row[e], l + right_row[e]);
        }
      }
    }
    // The root covers all k participations.
    const auto root = static_cast<std::int32_t>(k * k);
    for (std::size_t i = 0; i < w * w; ++i)
      result[i] = result[i] < 0 ? kInfeasible : result[i] + root;
  }
  return out;
}

std::int64_t TreeSensitivity::squared(std::int64_t rounds) const {
  if (rounds < 1 || rounds > max_rounds_) {
    throw InvalidInput(std::string(rounds_name_) + ": must be in [1, " +
                       std::to_string(max_rounds_) + "], got " + std::to_string(rounds));
  }
  // The forest of `rounds` leaves: one complete tree per set bit, largest first. Folded from the
  // smallest: best[k][s] = the largest sum over the trees folded so far with k participations,
  // none in their first s leaves, and nothing constraining what follows the last round.
  const auto w = static_cast<std::size_t>(width_);
  std::vector<std::int32_t> best;
  std::int64_t best_k = -1;
  std::int64_t leaves = 0;
  for (int j = 0; j <= floor_log2(rounds); ++j) {
    if (((rounds >> j) & 1) == 0) continue;
    const Table& tree = levels_[static_cast<std::size_t>(j)];
    leaves += std::int64_t{1} << j;
    const std::int64_t max_k = max_k_for(leaves);
    std::vector<std::int32_t> next(static_cast<std::size_t>(max_k + 1) * w, kInfeasible);
    for (std::int64_t k = 0; k <= max_k; ++k) {
      for (std::int64_t s = 0; s < width_; ++s) {
        std::int32_t& cell = next[static_cast<std::size_t>(k) * w + static_cast<std::size_t>(s)];
        if (best_k < 0) {
          if (k <= tree.max_k) cell = at(tree, k, s, separation_);
          continue;
        }
        for (std::int64_t a = std::max<std::int64_t>(0, k - best_k); a <= std::min(k, tree.max_k);
             ++a) {
          for (std::int64_t r = 0; r < width_; ++r) {
            const std::int32_t l = at(tree, a, s, r);
            const std::int32_t rest =
                best[static_cast<std::size_t>(k - a) * w + static_cast<std::size_t>(r)];
            if (l >= 0 && rest >= 0) cell = std::max(cell, l + rest);
          }
        }
      }
    }
    best = std::move(next);
    best_k = max_k;
  }
  std::int32_t result = 0;
  for (std::int64_t k = 0; k <= best_k; ++k)
    result = std::max(result, best[static_cast<std::size_t>(k) * w]);
  return result;
}

}  // namespace fedleaf::core
