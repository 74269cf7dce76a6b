#include "server/util/server_metrics.h"

#include <iterator>
#include <sstream>

namespace fedleaf::server {
namespace {

// Seconds; server steps run from microseconds (a fold) to seconds (a 100 MB model's close).
constexpr double kPhaseBucketBounds[] = {0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05,
                                         0.1,    0.25,   0.5,   1,     2.5,  5,     10};

}  // namespace

ServerMetrics::ServerMetrics()
    : round_bucket_bounds_{0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600},
      round_buckets_(round_bucket_bounds_.size(), 0) {}

void ServerMetrics::count_request(int status) {
  std::lock_guard lock(mutex_);
  ++requests_[status];
}
void ServerMetrics::count_claim(const std::string& outcome) {
  std::lock_guard lock(mutex_);
  ++claims_[outcome];
}
void ServerMetrics::count_upload(int status) {
  std::lock_guard lock(mutex_);
  ++uploads_[status];
}
void ServerMetrics::count_rejection(const std::string& reason) {
  std::lock_guard lock(mutex_);
  ++rejections_[reason];
}
void ServerMetrics::observe_round_duration(double seconds) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < round_bucket_bounds_.size(); ++i) {
    if (seconds <= round_bucket_bounds_[i]) {
      ++round_buckets_[i];
      break;
    }
  }
  round_seconds_sum_ += seconds;
  ++rounds_closed_;
}
void ServerMetrics::observe_phase(const std::string& phase, double seconds) {
  std::lock_guard lock(mutex_);
  Histogram& h = phases_[phase];
  h.buckets.resize(std::size(kPhaseBucketBounds), 0);
  for (std::size_t i = 0; i < h.buckets.size(); ++i) {
    if (seconds <= kPhaseBucketBounds[i]) {
      ++h.buckets[i];
      break;
    }
  }
  h.sum += seconds;
  ++h.count;
}
void ServerMetrics::count_group_commit(std::size_t answers, bool synced) {
  std::lock_guard lock(mutex_);
  ++group_commits_;
  if (synced) ++group_commit_syncs_;
  group_commit_answers_ += answers;
}
void ServerMetrics::add_bytes_in(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  bytes_in_ += bytes;
}
void ServerMetrics::add_bytes_out(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  bytes_out_ += bytes;
}

std::string ServerMetrics::render(std::int64_t open_leases, std::size_t waiting_claims) const {
  std::lock_guard lock(mutex_);
  std::ostringstream out;
  out << "# HELP fedleaf_http_requests_total HTTP responses by status code.\n"
         "# TYPE fedleaf_http_requests_total counter\n";
  for (const auto& [code, n] : requests_) {
    out << "fedleaf_http_requests_total{code=\"" << code << "\"} " << n << "\n";
  }
  out << "# HELP fedleaf_claims_total Task claims by outcome.\n"
         "# TYPE fedleaf_claims_total counter\n";
  for (const auto& [outcome, n] : claims_) {
    out << "fedleaf_claims_total{outcome=\"" << outcome << "\"} " << n << "\n";
  }
  out << "# HELP fedleaf_uploads_total Result uploads by response status.\n"
         "# TYPE fedleaf_uploads_total counter\n";
  for (const auto& [code, n] : uploads_) {
    out << "fedleaf_uploads_total{status=\"" << code << "\"} " << n << "\n";
  }
  out << "# HELP fedleaf_upload_rejections_total Rejected uploads by reason.\n"
         "# TYPE fedleaf_upload_rejections_total counter\n";
  for (const auto& [reason, n] : rejections_) {
    out << "fedleaf_upload_rejections_total{reason=\"" << reason << "\"} " << n << "\n";
  }
  out << "# HELP fedleaf_round_duration_seconds Wall time of closed rounds.\n"
         "# TYPE fedleaf_round_duration_seconds histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < round_bucket_bounds_.size(); ++i) {
    cumulative += round_buckets_[i];
    out << "fedleaf_round_duration_seconds_bucket{le=\"" << round_bucket_bounds_[i] << "\"} "
        << cumulative << "\n";
  }
  out << "fedleaf_round_duration_seconds_bucket{le=\"+Inf\"} " << rounds_closed_ << "\n"
      << "fedleaf_round_duration_seconds_sum " << round_seconds_sum_ << "\n"
      << "fedleaf_round_duration_seconds_count " << rounds_closed_ << "\n";
  out << "# HELP fedleaf_phase_seconds Server time per step: fold, close_finalize, close_encode, "
         "close_hash, close_store, commit, sync.\n"
         "# TYPE fedleaf_phase_seconds histogram\n";
  for (const auto& [phase, h] : phases_) {
    std::uint64_t below = 0;
    for (std::size_t i = 0; i < h.buckets.size(); ++i) {
      below += h.buckets[i];
      out << "fedleaf_phase_seconds_bucket{phase=\"" << phase << "\",le=\"" << kPhaseBucketBounds[i]
          << "\"} " << below << "\n";
    }
    out << "fedleaf_phase_seconds_bucket{phase=\"" << phase << "\",le=\"+Inf\"} " << h.count << "\n"
        << "fedleaf_phase_seconds_sum{phase=\"" << phase << "\"} " << h.sum << "\n"
        << "fedleaf_phase_seconds_count{phase=\"" << phase << "\"} " << h.count << "\n";
  }
  out << "# HELP fedleaf_group_commits_total Commits of batched operations.\n"
         "# TYPE fedleaf_group_commits_total counter\n"
      << "fedleaf_group_commits_total " << group_commits_ << "\n"
      << "# HELP fedleaf_group_commit_syncs_total Store syncs after a group commit.\n"
         "# TYPE fedleaf_group_commit_syncs_total counter\n"
      << "fedleaf_group_commit_syncs_total " << group_commit_syncs_ << "\n"
      << "# HELP fedleaf_group_commit_answers_total Answers released by group commits.\n"
         "# TYPE fedleaf_group_commit_answers_total counter\n"
      << "fedleaf_group_commit_answers_total " << group_commit_answers_ << "\n";
  out << "# HELP fedleaf_http_bytes_received_total Request body bytes received.\n"
         "# TYPE fedleaf_http_bytes_received_total counter\n"
      << "fedleaf_http_bytes_received_total " << bytes_in_ << "\n"
      << "# HELP fedleaf_http_bytes_sent_total Response body bytes sent.\n"
         "# TYPE fedleaf_http_bytes_sent_total counter\n"
      << "fedleaf_http_bytes_sent_total " << bytes_out_ << "\n"
      << "# HELP fedleaf_open_leases Leased tasks whose lease has not expired.\n"
         "# TYPE fedleaf_open_leases gauge\n"
      << "fedleaf_open_leases " << open_leases << "\n"
      << "# HELP fedleaf_waiting_claims Claims held open until a task appears (long poll).\n"
         "# TYPE fedleaf_waiting_claims gauge\n"
      << "fedleaf_waiting_claims " << waiting_claims << "\n";
  return out.str();
}

}  // namespace fedleaf::server
