// Evaluation metrics over per-example scores.
//
//   double auc = binary_auc(scores, labels);   // NaN when only one class is present
#pragma once

#include <cstdint>
#include <vector>

namespace fedleaf::core {

// Area under the ROC curve of `scores` for labels 0/1: the probability that a random positive
// scores above a random negative, ties counting one half (Mann-Whitney U with average ranks).
// NaN when there are no positives or no negatives. Throws InvalidInput on a size mismatch, a
// label other than 0/1 or a NaN score (±inf order as usual).
double binary_auc(const std::vector<float>& scores, const std::vector<std::int32_t>& labels);

}  // namespace fedleaf::core
