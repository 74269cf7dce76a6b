// Upload refusals: each refused AcceptStatus is counted under its reason and answered with its
// error; an accepted upload is never answered as refused.
#include "server/repository/upload_refusal.h"

#include <catch2/catch.hpp>

#include "server/util/server_errors.h"

namespace fedleaf::server {
namespace {

TaskRecord task_in_round(int round) {
  TaskRecord task;
  task.id = 42;
  task.round = round;
  task.lease_expires_at = 100;
  return task;
}

}  // namespace

TEST_CASE("refusal_reason_names_the_statistic_of_each_refusal", "[upload_refusal]") {
  CHECK(std::string(refusal_reason(AcceptStatus::kConflict)) == "conflict");
  CHECK(std::string(refusal_reason(AcceptStatus::kCompletedElsewhere)) == "lease_expired");
  CHECK(std::string(refusal_reason(AcceptStatus::kLeasedAgain)) == "lease_expired");
  CHECK(std::string(refusal_reason(AcceptStatus::kLeaseExpired)) == "lease_expired");
  CHECK(std::string(refusal_reason(AcceptStatus::kRoundClosed)) == "round_closed");
  CHECK_THROWS_AS(refusal_reason(AcceptStatus::kAccepted), Error);
  CHECK_THROWS_AS(refusal_reason(AcceptStatus::kRepeated), Error);
}

TEST_CASE("throw_refusal_answers_conflict_or_gone_naming_the_task", "[upload_refusal]") {
  const TaskRecord task = task_in_round(3);
  CHECK_THROWS_MATCHES(
      throw_refusal(AcceptStatus::kConflict, task, "p", 0), Conflict,
      Catch::Matchers::Message("task 42: a different result was already accepted for this lease"));
  CHECK_THROWS_MATCHES(throw_refusal(AcceptStatus::kCompletedElsewhere, task, "p", 0), Gone,
                       Catch::Matchers::Message("task 42: this lease expired and the task was "
                                                "completed under another lease"));
  CHECK_THROWS_MATCHES(
      throw_refusal(AcceptStatus::kLeasedAgain, task, "p", 0), Gone,
      Catch::Matchers::Message("task 42: this lease expired and the task was leased again"));
  CHECK_THROWS_AS(throw_refusal(AcceptStatus::kLeaseExpired, task, "p", 102.5), Gone);
  CHECK_THROWS_WITH(throw_refusal(AcceptStatus::kLeaseExpired, task, "p", 102.5),
                    Catch::Matchers::Contains("task 42: the lease expired 2.5"));
  CHECK_THROWS_MATCHES(throw_refusal(AcceptStatus::kRoundClosed, task, "spam", 0), Gone,
                       Catch::Matchers::Message("task 42: round 3 of population 'spam' is closed"));
  CHECK_THROWS_AS(throw_refusal(AcceptStatus::kAccepted, task, "p", 0), Error);
}

}  // namespace fedleaf::server
