// version_staleness (server/repository/version_staleness.h): a buffered version's reports by
// staleness from the store's counts per task round, their mean and maximum, the stored form and
// the status form.
#include "server/repository/version_staleness.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tests/core/error_matchers.h"

namespace fedleaf::server {

using nlohmann::json;

TEST_CASE("version_staleness_is_the_version_minus_each_tasks_round", "[staleness]") {
  // Version 5 folded 2 reports of tasks handed out on 5, 1 on 4 and 3 on 2.
  const VersionStaleness s = version_staleness({{2, 3}, {4, 1}, {5, 2}}, 5);
  CHECK(s.counts == std::map<std::uint64_t, std::uint64_t>{{0, 2}, {1, 1}, {3, 3}});
  CHECK(reports_of(s) == 6);
  CHECK(mean_staleness(s) == Approx((0 * 2 + 1 * 1 + 3 * 3) / 6.0));
  CHECK(max_staleness(s) == 3);
}

TEST_CASE("a_version_without_reports_has_mean_and_max_0", "[staleness]") {
  const VersionStaleness s = version_staleness({}, 3);
  CHECK(s.counts.empty());
  CHECK(reports_of(s) == 0);
  CHECK(mean_staleness(s) == 0);
  CHECK(max_staleness(s) == 0);
  CHECK(staleness_status_json(s) == json{{"mean", 0.0}, {"max", 0}, {"counts", json::object()}});
}

TEST_CASE("a_task_round_past_the_version_or_an_empty_count_is_a_damaged_store", "[staleness]") {
  CHECK_THROWS_MATCHES(version_staleness({{4, 1}}, 3), Error,
                       test::MessageContains("version 3: 1 stored results of tasks of round 4"));
  CHECK_THROWS_AS(version_staleness({{1, 0}}, 3), Error);
  CHECK_THROWS_AS(version_staleness({{-1, 2}}, 3), Error);
}

TEST_CASE("the_stored_counts_read_back_and_the_status_adds_mean_and_max", "[staleness]") {
  const VersionStaleness s = version_staleness({{7, 1}, {9, 3}, {10, 4}}, 10);
  const json stored = staleness_counts_json(s);
  CHECK(stored == json{{"0", 4}, {"1", 3}, {"3", 1}});
  CHECK(read_staleness_counts(stored, "robust_json.staleness") == s);
  const json status = staleness_status_json(s);
  CHECK(status["mean"].get<double>() == Approx(6.0 / 8));
  CHECK(status["max"] == 3);
  CHECK(status["counts"] == stored);
}

TEST_CASE("stored_counts_other_than_an_object_of_counts_under_decimal_keys_are_refused",
          "[staleness]") {
  for (const char* text : {R"([1])", R"({"x": 1})", R"({"01": 1})", R"({"-1": 1})", R"({"+1": 1})",
                           R"({"": 1})", R"({"1": 0})", R"({"1": -2})", R"({"1": 1.5})",
                           R"({"1": "2"})", R"({"99999999999999999999": 1})"}) {
    INFO(text);
    CHECK_THROWS_MATCHES(read_staleness_counts(json::parse(text), "robust_json.staleness"), Error,
                         test::MessageContains("robust_json.staleness is not an object of report "
                                               "counts by staleness"));
  }
}

}  // namespace fedleaf::server
