// ClaimParking: what a transport needs of the claims parked per population (long poll): park a
// wake-up behind the epoch a claim's answer carried, and take it back when the wait ended
// otherwise. ClaimWaiters (repository/claim_waiters.h, which also notifies) implements it; the
// HTTP adapter is handed it as this, so it includes nothing of the repository.
//
//   std::uint64_t ticket = parking.park(wait.population, wait.epoch, [] { /* post: retry */ });
//   if (parking.cancel(wait.population, ticket)) { /* not woken: send the 204 */ }
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace fedleaf::server {

class ClaimParking {
 public:
  using Wake = std::function<void()>;

  virtual ~ClaimParking() = default;
  // Parks `wake` until the population is next notified and returns its ticket (> 0); when the
  // population's epoch has moved past seen_epoch already, calls wake at once instead. `wake`
  // runs once, on the notifying thread: it must only post work elsewhere.
  virtual std::uint64_t park(const std::string& population, std::uint64_t seen_epoch,
                             Wake wake) = 0;
  // Removes a parked wake-up whose wait ended otherwise; false when it was woken already.
  virtual bool cancel(const std::string& population, std::uint64_t ticket) = 0;
};

}  // namespace fedleaf::server
