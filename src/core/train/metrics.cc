#include "core/train/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "core/error.h"

namespace fedleaf::core {

double binary_auc(const std::vector<float>& scores, const std::vector<std::int32_t>& labels) {
  if (scores.size() != labels.size()) {
    throw InvalidInput("binary_auc: " + std::to_string(scores.size()) + " scores for " +
                       std::to_string(labels.size()) + " labels");
  }
  std::size_t positives = 0;
  for (std::int32_t l : labels) {
    if (l != 0 && l != 1)
      throw InvalidInput("binary_auc: label " + std::to_string(l) + " is not 0 or 1");
    positives += static_cast<std::size_t>(l);
  }
  // NaN orders with nothing: sorting it breaks std::sort's contract, and the tie walk below
  // (a score equal to itself) never moved past it, so evaluation hung.
  for (std::size_t e = 0; e < scores.size(); ++e) {
    if (std::isnan(scores[e])) {
      throw InvalidInput("binary_auc: the score of example " + std::to_string(e) + " is NaN");
    }
  }
  const std::size_t negatives = labels.size() - positives;
  if (positives == 0 || negatives == 0) return std::numeric_limits<double>::quiet_NaN();
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return scores[a] < scores[b]; });
  // Sum of the (1-based, tie-averaged) ranks of the positives.
  double positive_rank_sum = 0.0;
  std::size_t i = 0;
  while (i < order.size()) {
    std::size_t j = i;
    std::size_t tied_positives = 0;
    while (j < order.size() && scores[order[j]] == scores[order[i]]) {
      tied_positives += static_cast<std::size_t>(labels[order[j]]);
      ++j;
    }
    const double average_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    positive_rank_sum += average_rank * static_cast<double>(tied_positives);
    i = j;
  }
  const double p = static_cast<double>(positives);
  const double u = positive_rank_sum - p * (p + 1.0) / 2.0;
  return u / (p * static_cast<double>(negatives));
}

}  // namespace fedleaf::core
