#include "server/repository/upload_refusal.h"

#include "core/error.h"
#include "server/util/server_errors.h"

namespace fedleaf::server {
namespace {

[[noreturn]] void not_a_refusal(const TaskRecord& task) {
  throw Error("task " + std::to_string(task.id) + ": an accepted result answered as refused");
}

}  // namespace

const char* refusal_reason(AcceptStatus status) {
  switch (status) {
    case AcceptStatus::kConflict:
      return "conflict";
    case AcceptStatus::kCompletedElsewhere:
    case AcceptStatus::kLeasedAgain:
    case AcceptStatus::kLeaseExpired:
      return "lease_expired";
    case AcceptStatus::kRoundClosed:
      return "round_closed";
    case AcceptStatus::kAccepted:
    case AcceptStatus::kRepeated:
      break;
  }
  throw Error("an accepted upload has no refusal reason");
}

void throw_refusal(AcceptStatus status, const TaskRecord& task, const std::string& population_id,
                   double now) {
  const std::string task_name = "task " + std::to_string(task.id);
  switch (status) {
    case AcceptStatus::kConflict:
      throw Conflict(task_name + ": a different result was already accepted for this lease");
    case AcceptStatus::kCompletedElsewhere:
      throw Gone(task_name + ": this lease expired and the task was completed under another lease");
    case AcceptStatus::kLeasedAgain:
      throw Gone(task_name + ": this lease expired and the task was leased again");
    case AcceptStatus::kLeaseExpired:
      throw Gone(task_name + ": the lease expired " + std::to_string(now - task.lease_expires_at) +
                 " s ago");
    case AcceptStatus::kRoundClosed:
      throw Gone(task_name + ": round " + std::to_string(task.round) + " of population '" +
                 population_id + "' is closed");
    case AcceptStatus::kAccepted:
    case AcceptStatus::kRepeated:
      break;
  }
  not_a_refusal(task);
}

}  // namespace fedleaf::server
