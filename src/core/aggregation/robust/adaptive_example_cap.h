// An adaptive cap on the example weight one report may claim (the plan's
// "max_examples_per_report": {"initial": N, "median_multiple": k}): the cap of each round after
// the first is k times the median num_examples the reports of the round before claimed.
//
//   const AdaptiveExampleCap rule{/*median_multiple=*/2.0};
//   std::uint64_t next = next_example_cap(/*cap=*/10000, /*median_claim=*/303, rule);  // 606
//   // next_round_plan.h applies it to a plan: with_example_cap(plan, next)
//
// Why: a report's num_examples is what the leaf says, and nothing checks it. A fixed cap must be
// set above the largest honest leaf's data, so one report claiming 2^53 still weighs as much as
// the cap, i.e. as cap / (typical claim) honest reports (10,000 against ~300 in the demo: 2/3 of
// every weighted mean). The median of a round's claims is moved only by a majority of its
// reports, so fewer than half the leaves cannot raise the cap; k > 1 leaves honest leaves with up
// to k times the typical data their full weight (larger ones count as k typical reports), and the
// cap follows honest data sizes as they grow or shrink, one round behind. Like the adaptive clip,
// the cap is fixed within a round (accumulators fold each report as it arrives, weighted), so
// round r's cap comes from round r − 1's claims and the first round uses the plan's "initial".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fedleaf::core {

struct AdaptiveExampleCap {
  double median_multiple = 0.0;  // k in [1, 1e6]: the cap as a multiple of the median claim

  friend bool operator==(const AdaptiveExampleCap& a, const AdaptiveExampleCap& b) {
    return a.median_multiple == b.median_multiple;
  }
  friend bool operator!=(const AdaptiveExampleCap& a, const AdaptiveExampleCap& b) {
    return !(a == b);
  }
};

inline constexpr double kMaxExampleCapMedianMultiple = 1e6;

// Throws InvalidInput "<what> <cap> is not an integer in [1, 2^53]" for a cap outside that range.
void check_example_cap(std::uint64_t cap, const std::string& what);

// The lower median of the claims (the ⌈n/2⌉-th smallest), 0 when there are none. The claims are
// the reports' num_examples as sent, before any cap.
std::uint64_t median_claim(std::vector<std::uint64_t> claims);

// The cap of the round after one whose reports claimed a median of `median` examples (0: the
// round had no report; the cap stays `cap`): floor(k · median), kept in [1, 2^53]. Requires cap in
// [1, 2^53] (else InvalidInput).
std::uint64_t next_example_cap(std::uint64_t cap, std::uint64_t median,
                               const AdaptiveExampleCap& rule);

}  // namespace fedleaf::core
