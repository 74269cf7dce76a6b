// Per-client-token request rate limit: a token bucket per presented token.
//
//   ClientRateLimiter limiter({/*rate_per_s=*/50, /*burst=*/100});
//   if (auto wait_s = limiter.admit(token, clock.now())) throw TooManyRequests(..., *wait_s);
//
// Each token has a bucket of `burst` requests refilled at `rate_per_s`; a request takes one, and
// a token whose bucket is empty is refused with the time until one request is refilled. Tokens
// are independent: one noisy browser tab (or one leaked client token) cannot slow the others.
// The key is whatever the caller presents — checked or not — so memory is bounded: at most
// `max_tokens` buckets are kept, and when the table is full the buckets that have refilled
// completely (indistinguishable from new ones) are dropped first, then the longest-idle ones.
// rate_per_s <= 0 disables the limit. Thread-safe.
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace fedleaf::server {

struct RateLimit {
  double rate_per_s = 0;  // sustained requests per second per token; <= 0: no limit
  double burst = 0;       // requests a token may send at once (>= 1 when limited)
  std::size_t max_tokens = 100'000;
};

class ClientRateLimiter {
 public:
  explicit ClientRateLimiter(RateLimit limit);
  // Takes one request of `token`'s bucket at time `now_s`. Returns nothing when admitted, else
  // the seconds until the token may send again (> 0).
  std::optional<double> admit(const std::string& token, double now_s);
  bool enabled() const { return limit_.rate_per_s > 0; }
  std::size_t tracked_tokens() const;

 private:
  struct Bucket {
    double tokens;
    double updated_s;
  };
  void make_room(double now_s);

  RateLimit limit_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace fedleaf::server
