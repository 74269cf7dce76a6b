// RoundRules: when a round closes and how long a leaf with nothing to do should wait — pure
// functions of the population's settings, its current round and the time, so the rules are
// tested without a store or a clock.
//
//   switch (next_round_step(population, round, now)) {
//     case RoundStep::kStay: ...           // the open round goes on
//     case RoundStep::kCloseTraining: ...  // publish model_{r+1}, open round r+1
//     case RoundStep::kFinish: ...         // the final evaluation is over
//   }
//   RetryLater hint = retry_hint(population, round, now, next_lease_expiry);
#pragma once

#include <cstdint>
#include <optional>

#include "server/store/store.h"

namespace fedleaf::server {

enum class RoundStep { kStay, kCloseTraining, kFinish };

// For a running population: a training round (number < rounds) closes at clients_per_round
// reports, or once its deadline has passed with at least min_reports (it stays open past the
// deadline until then); the final evaluation round (number == rounds) finishes when
// eval_tasks_per_round evaluations arrived or its deadline passed. kStay for a population that
// is not running. A paused population's rounds follow the same rules (its deadline ticks on: a
// round whose deadline passed during a pause closes at min_reports, before or after the resume).
RoundStep next_round_step(const PopulationRecord& population, const RoundRecord& round, double now);

// Retry hint while a leaf waits for the open round to close: short, because a round can close
// at any moment and its leaves should start the next one together, but growing with the round
// size so a population's waiting leaves poll at most ~250 times per second in all.
inline constexpr double kRoundPollS = 0.5;  // the longest hint
inline constexpr double kMinRoundPollS = 0.05;
// The hint to a paused population's leaves: a resume is noticed within it.
inline constexpr double kPausedRetryS = 10;
double round_poll_s(int clients_per_round);

// The answer to a claim with nothing to hand out.
struct RetryLater {
  double retry_after_s = 1;      // whole seconds, >= 1 (HTTP Retry-After)
  bool finished = false;         // the population is over: no task will come
  double retry_after_ms = 1000;  // finer hint: until the next lease expiry or deadline, >= 50
  // Set by TaskRepository::claim: the population's ClaimWaiters epoch when the answer was made
  // (a waiter parked with it is woken at once if tasks may have appeared since).
  std::uint64_t wake_epoch = 0;
  bool paused = false;  // an operator paused the population: ask again later (resume)
};

// For a running population: until the earliest of the round's deadline, the next lease expiry
// and round_poll_s (a round may close any moment), clamped to [50 ms, max(1 s, lease_s)]. For a
// finished one: an hour, finished set. For a paused one: kPausedRetryS, paused set.
RetryLater retry_hint(const PopulationRecord& population, const RoundRecord& round, double now,
                      std::optional<double> next_lease_expiry);

}  // namespace fedleaf::server
