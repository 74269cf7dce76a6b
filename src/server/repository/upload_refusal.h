// How an upload the store refused is answered: the rejection statistic it counts under and the
// error the leaf gets (410 Gone for a lease that no longer holds, 409 Conflict for different
// bytes under a lease that already completed) — one rule per AcceptStatus, pure.
//
//   reject(population, refusal_reason(status));
//   throw_refusal(status, task, population, now);
#pragma once

#include <string>

#include "server/store/store.h"

namespace fedleaf::server {

// The reason the rejection is counted under ("conflict", "lease_expired", "round_closed").
// Requires a refusal: not kAccepted or kRepeated (fedleaf::Error).
const char* refusal_reason(AcceptStatus status);

// Throws the answer to a refused upload of `task` (Conflict or Gone, naming the task and why).
// Requires a refusal, as refusal_reason.
[[noreturn]] void throw_refusal(AcceptStatus status, const TaskRecord& task,
                                const std::string& population_id, double now);

}  // namespace fedleaf::server
