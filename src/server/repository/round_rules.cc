#include "server/repository/round_rules.h"

#include <algorithm>
#include <cmath>

namespace fedleaf::server {

RoundStep next_round_step(const PopulationRecord& population, const RoundRecord& round,
                          double now) {
  if (population.state != RunState::kRunning) return RoundStep::kStay;
  if (round.number < population.settings.rounds) {
    const bool quorum = round.reports >= population.settings.clients_per_round;
    const bool deadline = now >= round.deadline && round.reports >= population.settings.min_reports;
    return quorum || deadline ? RoundStep::kCloseTraining : RoundStep::kStay;
  }
  const bool all_evaluated = round.eval_reports >= population.settings.eval_tasks_per_round;
  return all_evaluated || now >= round.deadline ? RoundStep::kFinish : RoundStep::kStay;
}

double round_poll_s(int clients_per_round) {
  return std::clamp(0.004 * clients_per_round, kMinRoundPollS, kRoundPollS);
}

RetryLater retry_hint(const PopulationRecord& population, const RoundRecord& round, double now,
                      std::optional<double> next_lease_expiry) {
  if (population.state == RunState::kFinished) return RetryLater{3600, true, 3'600'000};
  if (population.paused) return RetryLater{kPausedRetryS, false, kPausedRetryS * 1000, 0, true};
  // Tasks come back when a lease expires or the round reaches its deadline; a new round (new
  // tasks) opens whenever the open one reaches quorum, so waiting leaves poll at least that often.
  double wake = std::min(round.deadline, now + round_poll_s(population.settings.clients_per_round));
  if (next_lease_expiry) wake = std::min(wake, *next_lease_expiry);
  const double wait_s = std::clamp(wake - now, 0.05, std::max(1.0, population.settings.lease_s));
  return RetryLater{std::max(1.0, std::ceil(wait_s)), false, std::ceil(wait_s * 1000)};
}

}  // namespace fedleaf::server
