#include "server/util/server_metrics.h"

#include <iomanip>
#include <iterator>
#include <sstream>

namespace fedleaf::server {
namespace {

// Seconds; server steps run from microseconds (a fold) to seconds (a 100 MB model's close).
constexpr double kPhaseBucketBounds[] = {0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05,
                                         0.1,    0.25,   0.5,   1,     2.5,  5,     10};

// The # HELP and # TYPE lines that open a metric family.
void family(std::ostream& out, const char* name, const char* type, const char* help) {
  out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
}

// A counter family with one sample per value of `label`.
template <class Value>
void labelled_counter(std::ostream& out, const char* name, const char* label, const char* help,
                      const std::map<Value, std::uint64_t>& counts) {
  family(out, name, "counter", help);
  for (const auto& [value, n] : counts) {
    out << name << "{" << label << "=\"" << value << "\"} " << n << "\n";
  }
}

// A family of one unlabelled sample.
struct Single {
  const char* name;
  const char* type;
  const char* help;
  std::string value;
};

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
  labelled_counter(out, "fedleaf_http_requests_total", "code", "HTTP responses by status code.",
                   requests_);
  labelled_counter(out, "fedleaf_claims_total", "outcome", "Task claims by outcome.", claims_);
  labelled_counter(out, "fedleaf_uploads_total", "status", "Result uploads by response status.",
                   uploads_);
  labelled_counter(out, "fedleaf_upload_rejections_total", "reason", "Rejected uploads by reason.",
                   rejections_);
  family(out, "fedleaf_round_duration_seconds", "histogram", "Wall time of closed rounds.");
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < round_bucket_bounds_.size(); ++i) {
    cumulative += round_buckets_[i];
    out << "fedleaf_round_duration_seconds_bucket{le=\"" << round_bucket_bounds_[i] << "\"} "
        << cumulative << "\n";
  }
  out << "fedleaf_round_duration_seconds_bucket{le=\"+Inf\"} " << rounds_closed_ << "\n"
      << "fedleaf_round_duration_seconds_sum " << round_seconds_sum_ << "\n"
      << "fedleaf_round_duration_seconds_count " << rounds_closed_ << "\n";
  family(out, "fedleaf_phase_seconds", "histogram",
         "Server time per step: fold, close_finalize, close_encode, close_hash, close_store, "
         "commit, sync.");
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
  for (const Single& single : {
           Single{"fedleaf_group_commits_total", "counter", "Commits of batched operations.",
                  std::to_string(group_commits_)},
           Single{"fedleaf_group_commit_syncs_total", "counter",
                  "Store syncs after a group commit.", std::to_string(group_commit_syncs_)},
           Single{"fedleaf_group_commit_answers_total", "counter",
                  "Answers released by group commits.", std::to_string(group_commit_answers_)},
           Single{"fedleaf_http_bytes_received_total", "counter", "Request body bytes received.",
                  std::to_string(bytes_in_)},
           Single{"fedleaf_http_bytes_sent_total", "counter", "Response body bytes sent.",
                  std::to_string(bytes_out_)},
           Single{"fedleaf_open_leases", "gauge", "Leased tasks whose lease has not expired.",
                  std::to_string(open_leases)},
           Single{"fedleaf_waiting_claims", "gauge",
                  "Claims held open until a task appears (long poll).",
                  std::to_string(waiting_claims)},
       }) {
    family(out, single.name, single.type, single.help);
    out << single.name << " " << single.value << "\n";
  }
  return out.str();
}

std::string ServerMetrics::render(std::int64_t open_leases, std::size_t waiting_claims,
                                  const std::vector<PopulationEpsilon>& privacy) const {
  std::ostringstream out;
  out << render(open_leases, waiting_claims);
  if (privacy.empty()) return out.str();
  out << std::setprecision(17);
  // Population ids are [A-Za-z0-9_-] (is_valid_population_id): no label escaping needed.
  family(out, "fedleaf_privacy_epsilon_spent", "gauge",
         "Epsilon a private population has spent (at its delta), by population.");
  for (const PopulationEpsilon& p : privacy) {
    out << "fedleaf_privacy_epsilon_spent{population=\"" << p.population << "\"} " << p.spent
        << "\n";
  }
  family(out, "fedleaf_privacy_epsilon_planned", "gauge",
         "Epsilon a private population's configured run reaches (at its delta), by population.");
  for (const PopulationEpsilon& p : privacy) {
    out << "fedleaf_privacy_epsilon_planned{population=\"" << p.population << "\"} " << p.planned
        << "\n";
  }
  return out.str();
}

}  // namespace fedleaf::server
