#include "server/repository/claim_waiters.h"

#include <utility>

namespace fedleaf::server {

std::uint64_t ClaimWaiters::epoch(const std::string& population) const {
  std::lock_guard lock(mutex_);
  const auto it = populations_.find(population);
  return it == populations_.end() ? 0 : it->second.epoch;
}

std::uint64_t ClaimWaiters::park(const std::string& population, std::uint64_t seen_epoch,
                                 Wake wake) {
  std::uint64_t ticket = 0;
  {
    std::lock_guard lock(mutex_);
    ticket = next_ticket_++;
    Population& p = populations_[population];
    if (p.epoch == seen_epoch) {
      p.parked.emplace(ticket, std::move(wake));
      ++waiting_;
      return ticket;
    }
  }
  wake();
  return ticket;
}

bool ClaimWaiters::cancel(const std::string& population, std::uint64_t ticket) {
  std::lock_guard lock(mutex_);
  const auto it = populations_.find(population);
  if (it == populations_.end() || it->second.parked.erase(ticket) == 0) return false;
  --waiting_;
  return true;
}

void ClaimWaiters::notify(const std::string& population) {
  std::map<std::uint64_t, Wake> woken;
  {
    std::lock_guard lock(mutex_);
    Population& p = populations_[population];
    ++p.epoch;
    woken.swap(p.parked);
    waiting_ -= woken.size();
  }
  for (auto& entry : woken) entry.second();
}

std::size_t ClaimWaiters::waiting(const std::string& population) const {
  std::lock_guard lock(mutex_);
  const auto it = populations_.find(population);
  return it == populations_.end() ? 0 : it->second.parked.size();
}

std::size_t ClaimWaiters::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_;
}

}  // namespace fedleaf::server
