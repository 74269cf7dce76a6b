// Round rules: when a round closes and the retry hint, as pure functions of records and time.
#include "server/repository/round_rules.h"

#include <catch2/catch.hpp>

#include "tests/server/server_fixtures.h"

namespace fedleaf::server {
namespace {

PopulationRecord population(int rounds, int clients_per_round, int min_reports) {
  PopulationRecord p = test::test_population_record("p");
  p.settings.rounds = rounds;
  p.settings.clients_per_round = clients_per_round;
  p.settings.min_reports = min_reports;
  p.settings.lease_s = 10;
  return p;
}

RoundRecord round_at(int number, int reports, double deadline) {
  RoundRecord r;
  r.number = number;
  r.reports = reports;
  r.deadline = deadline;
  return r;
}

}  // namespace

TEST_CASE("training_round_closes_at_quorum_or_after_deadline_with_min_reports", "[round_rules]") {
  const PopulationRecord p = population(3, 4, 2);
  CHECK(next_round_step(p, round_at(0, 3, 100), 50) == RoundStep::kStay);
  CHECK(next_round_step(p, round_at(0, 4, 100), 50) == RoundStep::kCloseTraining);
  CHECK(next_round_step(p, round_at(0, 1, 100), 150) == RoundStep::kStay);  // past, too few
  CHECK(next_round_step(p, round_at(0, 2, 100), 100) == RoundStep::kCloseTraining);
}

TEST_CASE("final_evaluation_round_finishes_when_all_evaluated_or_at_deadline", "[round_rules]") {
  PopulationRecord p = population(1, 1, 1);
  p.settings.eval_tasks_per_round = 2;
  RoundRecord final_round = round_at(1, 0, 100);
  final_round.eval_reports = 1;
  CHECK(next_round_step(p, final_round, 50) == RoundStep::kStay);
  CHECK(next_round_step(p, final_round, 100) == RoundStep::kFinish);
  final_round.eval_reports = 2;
  CHECK(next_round_step(p, final_round, 50) == RoundStep::kFinish);
}

TEST_CASE("a_population_that_is_not_running_stays", "[round_rules]") {
  PopulationRecord p = population(1, 1, 1);
  p.state = RunState::kFinished;
  CHECK(next_round_step(p, round_at(1, 5, 0), 1e9) == RoundStep::kStay);
}

TEST_CASE("round_poll_grows_with_the_round_between_its_bounds", "[round_rules]") {
  CHECK(round_poll_s(1) == kMinRoundPollS);
  CHECK(round_poll_s(16) == Approx(0.064));
  CHECK(round_poll_s(100) == Approx(0.4));
  CHECK(round_poll_s(5000) == kRoundPollS);
}

TEST_CASE("retry_hint_is_the_earliest_of_poll_deadline_and_lease_expiry", "[round_rules]") {
  const PopulationRecord p = population(3, 100, 100);  // polls every 0.4 s
  CHECK(retry_hint(p, round_at(0, 0, 1000), 10, std::nullopt).retry_after_ms ==
        Approx(400).margin(1));
  CHECK(retry_hint(p, round_at(0, 0, 10.2), 10, std::nullopt).retry_after_ms ==
        Approx(200).margin(1));
  CHECK(retry_hint(p, round_at(0, 0, 1000), 10, 10.1).retry_after_ms == Approx(100).margin(1));
  // Never below 50 ms (a deadline already passed), whole seconds >= 1 for Retry-After.
  const RetryLater past = retry_hint(p, round_at(0, 0, 5), 10, std::nullopt);
  CHECK(past.retry_after_ms == 50);
  CHECK(past.retry_after_s == 1);
  CHECK_FALSE(past.finished);
}

TEST_CASE("retry_hint_of_a_finished_population_says_finished_for_an_hour", "[round_rules]") {
  PopulationRecord p = population(1, 1, 1);
  p.state = RunState::kFinished;
  const RetryLater hint = retry_hint(p, round_at(1, 0, 0), 10, 11.0);
  CHECK(hint.finished);
  CHECK(hint.retry_after_s == 3600);
  CHECK(hint.retry_after_ms == 3'600'000);
}

}  // namespace fedleaf::server
