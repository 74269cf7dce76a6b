#include "server/api/client_rate_limiter.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace fedleaf::server {

ClientRateLimiter::ClientRateLimiter(RateLimit limit) : limit_(limit) {
  if (limit_.rate_per_s > 0 && !(limit_.burst >= 1)) {
    throw InvalidInput("client rate limit: burst must be >= 1 when a rate is set");
  }
  if (limit_.max_tokens == 0) throw InvalidInput("client rate limit: max_tokens must be >= 1");
}

std::optional<double> ClientRateLimiter::admit(const std::string& token, double now_s) {
  if (!enabled()) return std::nullopt;
  std::lock_guard lock(mutex_);
  auto it = buckets_.find(token);
  if (it == buckets_.end()) {
    if (buckets_.size() >= limit_.max_tokens) make_room(now_s);
    it = buckets_.emplace(token, Bucket{limit_.burst, now_s}).first;
  }
  Bucket& b = it->second;
  // A clock that steps back refills nothing (and takes nothing back).
  const double elapsed = std::max(0.0, now_s - b.updated_s);
  b.tokens = std::min(limit_.burst, b.tokens + elapsed * limit_.rate_per_s);
  b.updated_s = std::max(b.updated_s, now_s);
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    return std::nullopt;
  }
  return (1.0 - b.tokens) / limit_.rate_per_s;
}

std::size_t ClientRateLimiter::tracked_tokens() const {
  std::lock_guard lock(mutex_);
  return buckets_.size();
}

void ClientRateLimiter::make_room(double now_s) {
  const double refill_s = limit_.burst / limit_.rate_per_s;
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    if (now_s - it->second.updated_s >= refill_s) {
      it = buckets_.erase(it);
    } else {
      ++it;
    }
  }
  if (buckets_.size() < limit_.max_tokens) return;
  // Every bucket is still refilling: drop the longest-idle half (their holders get a fresh,
  // full bucket back — a bound on memory, not on a determined attacker with many tokens, which
  // token checking and the connection cap bound instead).
  std::vector<std::pair<double, std::string>> by_age;
  by_age.reserve(buckets_.size());
  for (const auto& [token, bucket] : buckets_) by_age.emplace_back(bucket.updated_s, token);
  const std::size_t drop = std::max<std::size_t>(1, by_age.size() / 2);
  std::nth_element(by_age.begin(), by_age.begin() + static_cast<std::ptrdiff_t>(drop) - 1,
                   by_age.end());
  for (std::size_t i = 0; i < drop; ++i) buckets_.erase(by_age[i].second);
}

}  // namespace fedleaf::server
