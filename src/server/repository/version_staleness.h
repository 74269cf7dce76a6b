// VersionStaleness: the staleness of the reports a buffered population's version folded (docs/
// design.md "Buffered populations"), as the server recorded it: s = the version a report folded
// into − the round (version) its task was handed out on. A version's close counts them from the
// stored results and their tasks (Store::count_results_by_task_round), so a restart and every
// server sharing a PostgreSQL store count the same reports as one server would; the counts are
// kept in the closed round's robust_json (RoundRobustness::staleness, under "staleness") and the
// status shows them per version.
//
//   VersionStaleness s = version_staleness(store.count_results_by_task_round(id, v), v);
//   staleness_status_json(s);   // {"mean": 0.5, "max": 1, "counts": {"0": 2, "1": 2}}
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace fedleaf::server {

struct VersionStaleness {
  std::map<std::uint64_t, std::uint64_t> counts;  // staleness → reports (no zero counts)
  bool operator==(const VersionStaleness& other) const { return counts == other.counts; }
};

// The staleness of the reports of `version`, given how many of its results had a task of each
// round. Throws fedleaf::Error for a task round past `version` or a count below 1 (a damaged
// store: a version folds only reports of tasks handed out on it or before).
VersionStaleness version_staleness(const std::map<int, std::int64_t>& results_by_task_round,
                                   int version);

// Reports counted; their mean staleness (0 without reports) and the largest (0 without reports).
std::uint64_t reports_of(const VersionStaleness& staleness);
double mean_staleness(const VersionStaleness& staleness);
std::uint64_t max_staleness(const VersionStaleness& staleness);

// The stored form: {"<s>": reports, ...}, keys the staleness in decimal.
nlohmann::json staleness_counts_json(const VersionStaleness& staleness);
// Its inverse. Throws fedleaf::Error naming `key` for anything but an object of counts ≥ 1
// under canonical decimal keys.
VersionStaleness read_staleness_counts(const nlohmann::json& stored, const std::string& key);

// What the status shows of a version: {"mean", "max", "counts": stored form}.
nlohmann::json staleness_status_json(const VersionStaleness& staleness);

}  // namespace fedleaf::server
