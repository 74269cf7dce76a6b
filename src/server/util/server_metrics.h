// Process-wide counters of the task repository, rendered in the Prometheus text format
// (version 0.0.4) for GET /metrics.
//
//   ServerMetrics m;
//   m.count_claim("task");  m.count_upload(201);  m.observe_round_duration(12.5);
//   m.observe_phase("close_encode", 0.012);
//   std::string text = m.render(/*open_leases=*/3, /*waiting_claims=*/0);
//
// Thread-safe. Counters start at zero with the process (Prometheus handles resets).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace fedleaf::server {

class ServerMetrics {
 public:
  ServerMetrics();
  // Every HTTP response, by status code.
  void count_request(int status);
  // Claims by outcome: "task", "retry" (nothing to do yet), "finished", "paused", "error",
  // "undelivered" (a task whose answer could not be written to its client: its lease was given
  // back).
  void count_claim(const std::string& outcome);
  // Result uploads by response status.
  void count_upload(int status);
  // Rejected uploads by reason ("invalid_result", "lease_expired", "round_closed", "conflict",
  // "too_large", "timeout", "forbidden").
  void count_rejection(const std::string& reason);
  // Wall time of a closed round, in seconds.
  void observe_round_duration(double seconds);
  // Server time of one step of the work behind rounds, in seconds (fedleaf_phase_seconds
  // histogram, label phase): "fold" (an accepted train upload added to the aggregate), the round
  // close on the request that closes it — "close_finalize" (the next model from the aggregate),
  // "close_encode" (its safetensors), "close_hash" (sha256, the ETag), "close_store" (the close's
  // writes into the open batch) — and "commit" / "sync" (a group commit and the store sync
  // after it).
  void observe_phase(const std::string& phase, double seconds);
  // One group commit (and whether a store sync followed it) and the answers it released; the
  // ratio of answers to commits is the mean batch.
  void count_group_commit(std::size_t answers, bool synced);
  void add_bytes_in(std::uint64_t bytes);
  void add_bytes_out(std::uint64_t bytes);

  // `open_leases` (read from the store) and `waiting_claims` (parked long-poll claims) are gauges
  // the caller reads.
  std::string render(std::int64_t open_leases, std::size_t waiting_claims) const;
  // The same, with each private population's fedleaf_privacy_epsilon_spent and
  // fedleaf_privacy_epsilon_planned gauges (label population): (id, spent, planned).
  struct PopulationEpsilon {
    std::string population;
    double spent;
    double planned;
  };
  std::string render(std::int64_t open_leases, std::size_t waiting_claims,
                     const std::vector<PopulationEpsilon>& privacy) const;

 private:
  mutable std::mutex mutex_;
  std::map<int, std::uint64_t> requests_;
  std::map<std::string, std::uint64_t> claims_;
  std::map<int, std::uint64_t> uploads_;
  std::map<std::string, std::uint64_t> rejections_;
  std::vector<double> round_bucket_bounds_;
  std::vector<std::uint64_t> round_buckets_;  // cumulative counts are computed when rendering
  double round_seconds_sum_ = 0;
  std::uint64_t rounds_closed_ = 0;
  struct Histogram {
    std::vector<std::uint64_t> buckets;  // per bound of kPhaseBucketBounds, not cumulative
    double sum = 0;
    std::uint64_t count = 0;
  };
  std::map<std::string, Histogram> phases_;
  std::uint64_t group_commits_ = 0;
  std::uint64_t group_commit_syncs_ = 0;
  std::uint64_t group_commit_answers_ = 0;
  std::uint64_t bytes_in_ = 0;
  std::uint64_t bytes_out_ = 0;
};

}  // namespace fedleaf::server
