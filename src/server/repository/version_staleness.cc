#include "server/repository/version_staleness.h"

#include <algorithm>

#include "core/error.h"

namespace fedleaf::server {

using nlohmann::json;

VersionStaleness version_staleness(const std::map<int, std::int64_t>& results_by_task_round,
                                   int version) {
  VersionStaleness out;
  for (const auto& [task_round, results] : results_by_task_round) {
    if (task_round > version || task_round < 0 || results < 1) {
      throw Error("version " + std::to_string(version) + ": " + std::to_string(results) +
                  " stored results of tasks of round " + std::to_string(task_round) +
                  " (a version folds reports of its own or earlier versions' tasks)");
    }
    out.counts[static_cast<std::uint64_t>(version - task_round)] +=
        static_cast<std::uint64_t>(results);
  }
  return out;
}

std::uint64_t reports_of(const VersionStaleness& staleness) {
  std::uint64_t total = 0;
  for (const auto& [s, reports] : staleness.counts) total += reports;
  return total;
}

double mean_staleness(const VersionStaleness& staleness) {
  const std::uint64_t total = reports_of(staleness);
  if (total == 0) return 0;
  double sum = 0;
  for (const auto& [s, reports] : staleness.counts) {
    sum += static_cast<double>(s) * static_cast<double>(reports);
  }
  return sum / static_cast<double>(total);
}

std::uint64_t max_staleness(const VersionStaleness& staleness) {
  return staleness.counts.empty() ? 0 : staleness.counts.rbegin()->first;
}

json staleness_counts_json(const VersionStaleness& staleness) {
  json out = json::object();
  for (const auto& [s, reports] : staleness.counts) out[std::to_string(s)] = reports;
  return out;
}

VersionStaleness read_staleness_counts(const json& stored, const std::string& key) {
  const auto fail = [&] { throw Error(key + " is not an object of report counts by staleness"); };
  if (!stored.is_object()) fail();
  VersionStaleness out;
  for (const auto& [text, reports] : stored.items()) {
    // Canonical decimal, as staleness_counts_json writes it: "0", "12", never "01" or "+1".
    const bool canonical =
        !text.empty() && text.size() <= 18 &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        (text == "0" || text[0] != '0');
    if (!canonical || !reports.is_number_unsigned() || reports.get<std::uint64_t>() == 0) fail();
    out.counts[std::stoull(text)] = reports.get<std::uint64_t>();
  }
  return out;
}

json staleness_status_json(const VersionStaleness& staleness) {
  return {{"mean", mean_staleness(staleness)},
          {"max", max_staleness(staleness)},
          {"counts", staleness_counts_json(staleness)}};
}

}  // namespace fedleaf::server
