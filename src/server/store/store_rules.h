// Store rules: what accept_result decides and writes, the same for every backend — pure
// functions of the rows the backend read (under its locks), so each backend only reads and
// writes.
//
//   AcceptStatus status = classify_upload(task, request);       // task row read for update
//   if (status == AcceptStatus::kAccepted) {
//     apply_delta(round, task.kind, request.delta);              // round row read for update
//     complete_task(task, request, round.reports);
//   }
#pragma once

#include "server/store/store.h"

namespace fedleaf::server {

// The lease checks, in the order the answers are specified: a done task answers by its
// completing lease (same bytes: kRepeated, else kConflict) or kCompletedElsewhere; a leased
// task needs this lease to be its current one (kLeasedAgain) and unexpired at request.now
// (kLeaseExpired). The round's status is the backend's to check (kRoundClosed).
AcceptStatus classify_upload(const TaskRecord& task, const AcceptRequest& request);
// Adds one report to the round: train counters, or evaluate counters and metric sums.
void apply_delta(RoundRecord& round, TaskKind kind, const RoundDelta& delta);
// Adds a part's report counters (a PostgreSQL round shard) to a round's: reports, examples,
// sums, upload bytes, evaluate reports and each metric's sum.
void add_round_counts(RoundRecord& round, const RoundRecord& part);
// Marks the task done under request's lease with its receipt (request.receipt_body(reports)).
void complete_task(TaskRecord& task, const AcceptRequest& request, int reports);
// lock_open_round's answer for the round row the backend read (under its lock): the round while
// open, nullopt once closed, NotFound naming the round when there is no such row.
std::optional<RoundRecord> open_round_or_nothing(std::optional<RoundRecord> round,
                                                 const std::string& population_id, int number);

}  // namespace fedleaf::server
