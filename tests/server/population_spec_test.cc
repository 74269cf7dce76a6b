#include "server/repository/population_spec.h"

#include <catch2/catch.hpp>

#include "core/error.h"
#include "tests/core/error_matchers.h"

namespace fedleaf::server {

using test::MessageContains;

TEST_CASE("parse_population_spec_reads_fields_and_defaults", "[population_spec]") {
  const PopulationSpec s = parse_population_spec(
      R"({"id": "spam-1", "plan": {"updates": {}}, "seed": 7, "rounds": 5,
          "clients_per_round": 10, "over_selection": 1.25, "eval_tasks_per_round": 2})");

  CHECK(s.id == std::optional<std::string>("spam-1"));
  CHECK(s.plan_json == R"({"updates":{}})");
  CHECK(s.seed == std::optional<std::uint64_t>(7));
  CHECK_FALSE(s.initial_model);
  CHECK(s.settings.rounds == 5);
  CHECK(s.settings.clients_per_round == 10);
  CHECK(s.settings.min_reports == 10);
  CHECK(s.settings.train_tasks_per_round == 13);
  CHECK(s.settings.eval_tasks_per_round == 2);
  CHECK(s.settings.round_deadline_s == 600);
  CHECK(s.settings.lease_s == 120);
}

TEST_CASE("parse_population_spec_decodes_the_initial_model", "[population_spec]") {
  const PopulationSpec s =
      parse_population_spec(R"({"plan": {}, "initial_model_b64": "aGVsbG8="})");
  CHECK(s.initial_model == std::optional<std::string>("hello"));
  CHECK_FALSE(s.id);
}

TEST_CASE("parse_population_spec_rejects_broken_rules_naming_the_field", "[population_spec]") {
  CHECK_THROWS_MATCHES(parse_population_spec("[1]"), InvalidInput, MessageContains("object"));
  CHECK_THROWS_MATCHES(parse_population_spec(R"({"seed": 1})"), InvalidInput,
                       MessageContains("'plan'"));
  CHECK_THROWS_MATCHES(parse_population_spec(R"({"plan": {}})"), InvalidInput,
                       MessageContains("exactly one"));
  CHECK_THROWS_MATCHES(parse_population_spec(R"({"plan": {}, "seed": 1, "initial_model_b64": ""})"),
                       InvalidInput, MessageContains("exactly one"));
  CHECK_THROWS_MATCHES(parse_population_spec(R"({"plan": {}, "seed": -1})"), InvalidInput,
                       MessageContains("'seed'"));
  CHECK_THROWS_MATCHES(parse_population_spec(R"({"plan": {}, "seed": 1, "rounds": 0})"),
                       InvalidInput, MessageContains("'rounds'"));
  CHECK_THROWS_MATCHES(
      parse_population_spec(R"({"plan": {}, "seed": 1, "clients_per_round": 2, "min_reports": 3})"),
      InvalidInput, MessageContains("'min_reports'"));
  CHECK_THROWS_MATCHES(parse_population_spec(R"({"plan": {}, "seed": 1, "lease_s": 0})"),
                       InvalidInput, MessageContains("'lease_s'"));
  CHECK_THROWS_MATCHES(parse_population_spec(R"({"plan": {}, "seed": 1, "over_selection": 0.5})"),
                       InvalidInput, MessageContains("'over_selection'"));
  CHECK_THROWS_MATCHES(parse_population_spec(R"({"plan": {}, "seed": 1, "id": "a/b"})"),
                       InvalidInput, MessageContains("'id'"));
  // Regression: an unknown field (a typo such as "clients_per_rnd") was skipped, so the
  // population ran with the default.
  CHECK_THROWS_MATCHES(parse_population_spec(R"({"plan": {}, "seed": 1, "clients_per_rnd": 5})"),
                       InvalidInput,
                       MessageContains("population: unknown field 'clients_per_rnd' (the fields "
                                       "are id, plan, initial_model_b64, seed, rounds,"));
  // Regression: an unsigned above INT64_MAX was reported as a negative number.
  CHECK_THROWS_MATCHES(
      parse_population_spec(R"({"plan": {}, "seed": 1, "rounds": 18446744073709551615})"),
      InvalidInput, MessageContains("'rounds' must be in [1, 1000000], got 18446744073709551615"));
  // Regression: leases and deadlines of 1e300 s, and 2^31 evaluate tasks a round, were taken.
  CHECK_THROWS_MATCHES(parse_population_spec(R"({"plan": {}, "seed": 1, "lease_s": 1e300})"),
                       InvalidInput, MessageContains("'lease_s' must be a number > 0 and <= "));
  CHECK_THROWS_MATCHES(
      parse_population_spec(R"({"plan": {}, "seed": 1, "round_deadline_s": 31536001})"),
      InvalidInput, MessageContains("'round_deadline_s' must be a number > 0 and <= "));
  CHECK(parse_population_spec(R"({"plan": {}, "seed": 1, "lease_s": 31536000})").settings.lease_s ==
        31536000);
  CHECK_THROWS_MATCHES(
      parse_population_spec(R"({"plan": {}, "seed": 1, "eval_tasks_per_round": 1000001})"),
      InvalidInput, MessageContains("'eval_tasks_per_round' must be in [0, 1000000]"));
  // Regression: a key given twice kept its last value (the plan is stored as the server read it).
  CHECK_THROWS_MATCHES(
      parse_population_spec(R"({"plan": {}, "seed": 1, "rounds": 2, "rounds": 9})"), InvalidInput,
      MessageContains("population: the key 'rounds' appears twice"));
  CHECK_THROWS_MATCHES(
      parse_population_spec(R"({"plan": {"train": {"epochs": 1, "epochs": 50}}, "seed": 1})"),
      InvalidInput, MessageContains("population: the key 'epochs' (in 'train') appears twice"));
}

// Regression: a plan 100,000 arrays deep was accepted and then printed recursively (plan_json),
// which overflowed the server's stack.
TEST_CASE("parse_population_spec_rejects_json_nested_past_the_limit", "[population_spec]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THROWS_MATCHES(parse_population_spec(R"({"seed": 1, "plan": {"zz": )" + deep + "}}"),
                       InvalidInput, MessageContains("population: JSON nested deeper than 64"));
  const std::string fits = std::string(62, '[') + std::string(62, ']');
  CHECK(parse_population_spec(R"({"seed": 1, "plan": {"zz": )" + fits + "}}").plan_json.size() ==
        fits.size() + 7);
}

TEST_CASE("is_valid_population_id_allows_url_safe_names", "[population_spec]") {
  CHECK(is_valid_population_id("spam_v2-A"));
  CHECK_FALSE(is_valid_population_id(""));
  CHECK_FALSE(is_valid_population_id("a b"));
  CHECK_FALSE(is_valid_population_id(std::string(65, 'a')));
}

}  // namespace fedleaf::server
