#include "server/api/population_body.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tests/core/error_matchers.h"

namespace fedleaf::server {

using test::MessageContains;

TEST_CASE("parse_population_body_reads_fields_and_defaults", "[population_body]") {
  const PopulationSpec s = parse_population_body(
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

TEST_CASE("parse_population_body_decodes_the_initial_model", "[population_body]") {
  const PopulationSpec s =
      parse_population_body(R"({"plan": {}, "initial_model_b64": "aGVsbG8="})");
  CHECK(s.initial_model == std::optional<std::string>("hello"));
  CHECK_FALSE(s.id);
}

TEST_CASE("parse_population_body_rejects_broken_rules_naming_the_field", "[population_body]") {
  CHECK_THROWS_MATCHES(parse_population_body("[1]"), InvalidInput, MessageContains("object"));
  CHECK_THROWS_MATCHES(parse_population_body(R"({"seed": 1})"), InvalidInput,
                       MessageContains("'plan'"));
  CHECK_THROWS_MATCHES(parse_population_body(R"({"plan": {}})"), InvalidInput,
                       MessageContains("exactly one"));
  CHECK_THROWS_MATCHES(parse_population_body(R"({"plan": {}, "seed": 1, "initial_model_b64": ""})"),
                       InvalidInput, MessageContains("exactly one"));
  CHECK_THROWS_MATCHES(parse_population_body(R"({"plan": {}, "seed": -1})"), InvalidInput,
                       MessageContains("'seed'"));
  CHECK_THROWS_MATCHES(parse_population_body(R"({"plan": {}, "seed": 1, "rounds": 0})"),
                       InvalidInput, MessageContains("'rounds'"));
  CHECK_THROWS_MATCHES(
      parse_population_body(R"({"plan": {}, "seed": 1, "clients_per_round": 2, "min_reports": 3})"),
      InvalidInput, MessageContains("'min_reports'"));
  CHECK_THROWS_MATCHES(parse_population_body(R"({"plan": {}, "seed": 1, "lease_s": 0})"),
                       InvalidInput, MessageContains("'lease_s'"));
  CHECK_THROWS_MATCHES(parse_population_body(R"({"plan": {}, "seed": 1, "over_selection": 0.5})"),
                       InvalidInput, MessageContains("'over_selection'"));
  CHECK_THROWS_MATCHES(parse_population_body(R"({"plan": {}, "seed": 1, "id": "a/b"})"),
                       InvalidInput, MessageContains("'id'"));
  // Regression: an unknown field (a typo such as "clients_per_rnd") was skipped, so the
  // population ran with the default.
  CHECK_THROWS_MATCHES(parse_population_body(R"({"plan": {}, "seed": 1, "clients_per_rnd": 5})"),
                       InvalidInput,
                       MessageContains("population: unknown field 'clients_per_rnd' (the fields "
                                       "are id, plan, initial_model_b64, seed, rounds,"));
  // Regression: an unsigned above INT64_MAX was reported as a negative number.
  CHECK_THROWS_MATCHES(
      parse_population_body(R"({"plan": {}, "seed": 1, "rounds": 18446744073709551615})"),
      InvalidInput, MessageContains("'rounds' must be in [1, 1000000], got 18446744073709551615"));
  // Regression: leases and deadlines of 1e300 s, and 2^31 evaluate tasks a round, were taken.
  CHECK_THROWS_MATCHES(parse_population_body(R"({"plan": {}, "seed": 1, "lease_s": 1e300})"),
                       InvalidInput, MessageContains("'lease_s' must be a number > 0 and <= "));
  CHECK_THROWS_MATCHES(
      parse_population_body(R"({"plan": {}, "seed": 1, "round_deadline_s": 31536001})"),
      InvalidInput, MessageContains("'round_deadline_s' must be a number > 0 and <= "));
  CHECK(parse_population_body(R"({"plan": {}, "seed": 1, "lease_s": 31536000})").settings.lease_s ==
        31536000);
  CHECK_THROWS_MATCHES(
      parse_population_body(R"({"plan": {}, "seed": 1, "eval_tasks_per_round": 1000001})"),
      InvalidInput, MessageContains("'eval_tasks_per_round' must be in [0, 1000000]"));
  // Regression: a key given twice kept its last value (the plan is stored as the server read it).
  CHECK_THROWS_MATCHES(
      parse_population_body(R"({"plan": {}, "seed": 1, "rounds": 2, "rounds": 9})"), InvalidInput,
      MessageContains("population: the key 'rounds' appears twice"));
  CHECK_THROWS_MATCHES(
      parse_population_body(R"({"plan": {"train": {"epochs": 1, "epochs": 50}}, "seed": 1})"),
      InvalidInput, MessageContains("population: the key 'epochs' (in 'train') appears twice"));
}

// Regression: a plan 100,000 arrays deep was accepted and then printed recursively (plan_json),
// which overflowed the server's stack.
TEST_CASE("parse_population_body_rejects_json_nested_past_the_limit", "[population_body]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THROWS_MATCHES(parse_population_body(R"({"seed": 1, "plan": {"zz": )" + deep + "}}"),
                       InvalidInput, MessageContains("population: JSON nested deeper than 64"));
  const std::string fits = std::string(62, '[') + std::string(62, ']');
  CHECK(parse_population_body(R"({"seed": 1, "plan": {"zz": )" + fits + "}}").plan_json.size() ==
        fits.size() + 7);
}

TEST_CASE("parse_population_body_defaults_to_fedavg_and_stores_the_optimizer_written_out",
          "[population_body]") {
  CHECK(parse_population_body(R"({"plan": {}, "seed": 1})").settings.server_optimizer_json == "");
  const PopulationSpec adam = parse_population_body(
      R"({"plan": {}, "seed": 1, "server_optimizer": {"type": "adam", "beta2": 0.999}})");
  CHECK(nlohmann::json::parse(adam.settings.server_optimizer_json) ==
        nlohmann::json::parse(R"({"type": "adam", "learning_rate": 0.01, "beta1": 0.9,
                                  "beta2": 0.999, "epsilon": 0.001, "bias_correction": true})"));
  const PopulationSpec sgd = parse_population_body(
      R"({"plan": {}, "seed": 1,
          "server_optimizer": {"type": "sgd", "learning_rate": 0.5, "momentum": 0.9}})");
  CHECK(nlohmann::json::parse(sgd.settings.server_optimizer_json) ==
        nlohmann::json::parse(R"({"type": "sgd", "learning_rate": 0.5, "momentum": 0.9})"));
}

// One case per rule (the rules themselves: server_optimizer_test.cc); each names the field.
TEST_CASE("parse_population_body_rejects_a_broken_server_optimizer_naming_the_field",
          "[population_body]") {
  const auto refused = [](const std::string& optimizer, const std::string& fragment) {
    INFO(optimizer);
    CHECK_THROWS_MATCHES(
        parse_population_body(R"({"plan": {}, "seed": 1, "server_optimizer": )" + optimizer + "}"),
        InvalidInput, MessageContains(fragment));
  };
  refused(R"("adam")", "population.server_optimizer: expected an object");
  refused(R"({"momentum": 0.9})", "population.server_optimizer.type: missing");
  refused(R"({"type": "yogi"})", "population.server_optimizer.type: unknown server optimizer");
  refused(R"({"type": "sgd", "learning_rate": 0})",
          "population.server_optimizer.learning_rate: expected a number in (0, 1000000]");
  refused(R"({"type": "sgd", "momentum": 1})",
          "population.server_optimizer.momentum: expected a number in [0, 1)");
  refused(R"({"type": "adam", "beta1": -0.1})",
          "population.server_optimizer.beta1: expected a number in [0, 1)");
  refused(R"({"type": "adam", "beta2": 1})",
          "population.server_optimizer.beta2: expected a number in [0, 1)");
  refused(R"({"type": "adam", "epsilon": 0})",
          "population.server_optimizer.epsilon: expected a number in (0, 1000000]");
  refused(R"({"type": "adam", "bias_correction": "yes"})",
          "population.server_optimizer.bias_correction: expected true or false");
  refused(R"({"type": "sgd", "beta1": 0.9})", "population.server_optimizer: unknown field 'beta1'");
}

TEST_CASE("parse_population_body_reads_a_buffered_population", "[population_body][buffered]") {
  const PopulationSpec sync = parse_population_body(R"({"plan": {}, "seed": 1})");
  CHECK(sync.settings.buffered_json.empty());
  CHECK(parse_population_body(R"({"plan": {}, "seed": 1, "mode": "synchronous"})")
            .settings.buffered_json.empty());
  const PopulationSpec s = parse_population_body(
      R"({"plan": {}, "seed": 1, "rounds": 40, "mode": "buffered", "buffer_size": 4,
          "concurrency": 12, "max_staleness": 3, "staleness_weight": {"weight": "constant"}})");
  CHECK(nlohmann::json::parse(s.settings.buffered_json) ==
        nlohmann::json::parse(R"({"buffer_size": 4, "concurrency": 12, "max_staleness": 3,
                                  "staleness_weight": {"weight": "constant"}})"));
  CHECK(s.settings.rounds == 40);
  CHECK(s.settings.clients_per_round == 4);
  CHECK(s.settings.min_reports == 4);
  CHECK(s.settings.train_tasks_per_round == 12);
}

TEST_CASE("parse_population_body_rejects_a_broken_buffered_population_naming_the_field",
          "[population_body][buffered]") {
  const auto refused = [](const std::string& fields, const std::string& fragment) {
    INFO(fields);
    CHECK_THROWS_MATCHES(parse_population_body(R"({"plan": {}, "seed": 1, )" + fields + "}"),
                         InvalidInput, MessageContains(fragment));
  };
  refused(R"("mode": "async")", R"(population.mode: expected "synchronous" or "buffered")");
  refused(R"("buffer_size": 4)", R"(population.buffer_size: only with "mode": "buffered")");
  refused(R"("mode": "synchronous", "max_staleness": 4)",
          R"(population.max_staleness: only with "mode": "buffered")");
  refused(R"("mode": "buffered")", "population.buffer_size: missing");
  refused(R"("mode": "buffered", "buffer_size": 0)", "population.buffer_size: expected an integer");
  refused(R"("mode": "buffered", "buffer_size": 2, "concurrency": -1)",
          "population.concurrency: expected an integer");
  refused(R"("mode": "buffered", "buffer_size": 2, "clients_per_round": 2)",
          R"(population.clients_per_round: not a field of "mode": "buffered")");
  refused(R"("mode": "buffered", "buffer_size": 2, "over_selection": 2)",
          R"(population.over_selection: not a field of "mode": "buffered")");
  refused(R"("mode": "buffered", "buffer_size": 2, "staleness_weight": {"weight": "hinge"})",
          "population.staleness_weight.weight: unknown staleness weight 'hinge'");
  refused(R"("mode": "buffered", "buffer_size": 2, "buffer": 2)",
          "population: unknown field 'buffer'");
}

TEST_CASE("is_valid_population_id_allows_url_safe_names", "[population_body]") {
  CHECK(is_valid_population_id("spam_v2-A"));
  CHECK_FALSE(is_valid_population_id(""));
  CHECK_FALSE(is_valid_population_id("a b"));
  CHECK_FALSE(is_valid_population_id(std::string(65, 'a')));
}

}  // namespace fedleaf::server
