// ClaimWaiters: the claims parked per population (long poll, `tasks:claim` with a wait), woken
// when a task may have become available — a round opened or the population finished, a lease
// expired. Holds callbacks only: waiting costs no thread.
//
//   ClaimWaiters waiters;
//   std::uint64_t seen = waiters.epoch("spam");           // read with the claim's answer
//   auto ticket = waiters.park("spam", seen, [] { /* post: handle the claim again */ });
//   waiters.notify("spam");                                // the repository: a round opened
//   waiters.cancel("spam", ticket);                        // the wait ended first: false if woken
//
// No lost wake-up: every notify() bumps the population's epoch, and park() with an epoch older
// than the current one wakes at once. TaskRepository reads the epoch and notifies under its own
// mutex, so a claim that found nothing either sees the epoch before a task appeared (and is
// woken) or the task itself.
//
// Wake callbacks run on the notifying thread (often under the repository mutex), once, outside
// this object's lock: they must only post work elsewhere, never call back into the repository.
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "server/util/claim_parking.h"

namespace fedleaf::server {

class ClaimWaiters final : public ClaimParking {
 public:
  // The population's epoch: how many times it was notified.
  std::uint64_t epoch(const std::string& population) const;
  // Parks `wake` until the next notify(population) and returns its ticket (> 0); when the epoch
  // has moved past seen_epoch already, calls wake at once instead (still returns a ticket, which
  // cancel() then reports as woken).
  std::uint64_t park(const std::string& population, std::uint64_t seen_epoch, Wake wake) override;
  // Removes a parked waiter whose wait ended otherwise; false when it was woken already.
  bool cancel(const std::string& population, std::uint64_t ticket) override;
  // Wakes every waiter parked on the population and bumps its epoch.
  void notify(const std::string& population);
  // Parked waiters of one population, and of all.
  std::size_t waiting(const std::string& population) const;
  std::size_t waiting() const;

 private:
  struct Population {
    std::uint64_t epoch = 0;
    std::map<std::uint64_t, Wake> parked;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Population> populations_;
  std::uint64_t next_ticket_ = 1;
  std::size_t waiting_ = 0;
};

}  // namespace fedleaf::server
